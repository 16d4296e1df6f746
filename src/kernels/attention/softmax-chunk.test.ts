// The wasm softmax steps attention runs (assembly/shared/common.ts softmaxChunk, softmaxRows): numerators
// against Math.exp, the running state's rescale, masked positions, and a NaN score anywhere in a row (the
// vector part or the scalar tail) making the row's max NaN, as f32x4.max did before the pmax scan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wasmKernels, wasmFailure } from '../runtime/wasm.js';
import { Prng } from '../../numeric/prng.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;
/** exp4's measured error is ~1 ulp; 4e-7 relative is ~3 ulp of f32. */
const REL = 4e-7;

interface Chunk {
  readonly scores: Float32Array; // [R, stride]
  readonly lohi: Int32Array; // [R, 2]
  readonly m: Float32Array; // [R]
  readonly l: Float64Array; // [R]
  readonly acc: Float32Array; // [R, D]
}

/** Runs softmaxChunk on copies in arena memory; returns the state after it. */
function runChunk(c: Chunk, R: number, stride: number, D: number): Chunk {
  const k = wasmKernels()!;
  const a = k.arena;
  const s = a.alloc(c.scores.byteLength);
  const lh = a.alloc(c.lohi.byteLength);
  const m = a.alloc(c.m.byteLength);
  const l = a.alloc(c.l.byteLength);
  const acc = a.alloc(c.acc.byteLength);
  a.f32().set(c.scores, s >>> 2);
  new Int32Array(a.memory.buffer).set(c.lohi, lh >>> 2);
  a.f32().set(c.m, m >>> 2);
  new Float64Array(a.memory.buffer).set(c.l, l >>> 3);
  a.f32().set(c.acc, acc >>> 2);
  k.exports.softmaxChunk(s, R, stride, lh, m, l, acc, D);
  const out = {
    scores: a.f32().slice(s >>> 2, (s >>> 2) + R * stride),
    lohi: c.lohi,
    m: a.f32().slice(m >>> 2, (m >>> 2) + R),
    l: new Float64Array(a.memory.buffer).slice(l >>> 3, (l >>> 3) + R),
    acc: a.f32().slice(acc >>> 2, (acc >>> 2) + R * D),
  };
  for (const p of [s, lh, m, l, acc]) a.free(p);
  return out;
}

function close(got: number, want: number, what: string, rel = REL): void {
  assert.ok(Math.abs(got - want) <= rel * Math.abs(want) + 1e-30, `${what}: ${got}, want ${want}`);
}

test('softmaxChunk: numerators, sums and the rescaled state match a float64 model', { skip }, () => {
  const rng = new Prng(7);
  const R = 5;
  const D = 8;
  // Lengths with and without a scalar tail; row 3 masked at both ends, row 4 empty.
  const stride = 203;
  const lohi = new Int32Array([0, 203, 0, 200, 5, 203, 17, 150, 40, 40]);
  const scores = Float32Array.from({ length: R * stride }, () => rng.normal() * 4);
  // Row 0's running max above the chunk's (no rescale), row 1 below it (rescale), the rest first chunks.
  const m = Float32Array.from([100, -3, -Infinity, -Infinity, -Infinity]);
  const l = Float64Array.from([2.5, 1.25, 0, 0, 0]);
  const acc = Float32Array.from({ length: R * D }, () => rng.normal());
  const out = runChunk({ scores, lohi, m, l, acc }, R, stride, D);
  for (let r = 0; r < R; r++) {
    const [lo, hi] = [lohi[2 * r]!, lohi[2 * r + 1]!];
    const row = scores.subarray(r * stride, (r + 1) * stride);
    if (lo >= hi) {
      assert.ok(
        out.scores.subarray(r * stride, (r + 1) * stride).every((x) => x === 0),
        `row ${r} zeroed`,
      );
      assert.equal(out.m[r], m[r]);
      continue;
    }
    let cmax = -Infinity;
    for (let t = lo; t < hi; t++) cmax = Math.max(cmax, row[t]!);
    const max = Math.max(m[r]!, cmax);
    assert.equal(out.m[r], Math.fround(max), `row ${r} max`);
    // The kernel subtracts in f32, then takes e^x of that.
    const alpha = m[r] === -Infinity ? 0 : Math.exp(Math.fround(m[r]! - max));
    let sum = l[r]! * alpha;
    for (let t = 0; t < stride; t++) {
      const got = out.scores[r * stride + t]!;
      if (t < lo || t >= hi) {
        assert.equal(got, 0, `row ${r} position ${t} masked`);
        continue;
      }
      const want = Math.exp(Math.fround(row[t]! - max));
      close(got, want, `row ${r} position ${t}`);
      sum += got;
    }
    // Partials of 64 numerators are summed in f32 lanes: 16 * 2^-24 relative at most.
    close(out.l[r]!, sum, `row ${r} sum`, 1e-6);
    for (let c = 0; c < D; c++) close(out.acc[r * D + c]!, acc[r * D + c]! * (alpha || (m[r] === max ? 1 : 0)), `row ${r} acc ${c}`);
  }
});

test('softmaxChunk: a NaN score makes its row NaN wherever it sits; other rows are untouched by it', { skip }, () => {
  const R = 3;
  const D = 4;
  const stride = 22; // 20 in vector steps, 2 in the scalar tail
  for (const at of [0, 9, 19, 21]) {
    const scores = Float32Array.from({ length: R * stride }, (_, i) => (i % 7) - 3);
    scores[stride + at] = NaN;
    const lohi = new Int32Array([0, stride, 0, stride, 0, stride]);
    const out = runChunk({ scores, lohi, m: new Float32Array(R).fill(-Infinity), l: new Float64Array(R), acc: new Float32Array(R * D) }, R, stride, D);
    assert.ok(Number.isNaN(out.m[1]), `NaN at ${at}: row max ${out.m[1]}`);
    assert.ok(Number.isNaN(out.l[1]), `NaN at ${at}: row sum ${out.l[1]}`);
    // Negative control: the rows around it keep finite maxima and sums.
    for (const r of [0, 2]) {
      assert.equal(out.m[r], 3);
      assert.ok(Number.isFinite(out.l[r]), `row ${r} sum ${out.l[r]}`);
    }
  }
});
