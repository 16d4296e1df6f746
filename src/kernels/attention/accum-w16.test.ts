// q4_0_accum_w16 / q8_0_accum_w16 (assembly/attention/accum_w16.ts): integer weighted sums over packed V, checked
// against the f32 kernels (q4_0_accum / q8_0_accum) and bit for bit against a JS model of their definition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wasmKernels, type WasmKernels } from '../runtime/wasm.js';
import { fp16ToFp32 } from '../../numeric/half.js';
import { Prng } from '../../numeric/prng.js';

/**
 * Largest per-row NMSE of acc against the f32 kernel. Each 16-bit weight is off by at most half a step, the step
 * being 1/32767 of its (row, 32-token, 32-channel) block's largest |w * d|: the expected NMSE of a block is
 * n * (step^2 / 12) / sum_t (w_t d_t)^2 <= 32 / (12 * 32767^2) = 2.5e-9. Measured here (scales spread over
 * 2^-10..2, rows of 32-256 channels): worst row 5.7e-9 (q8_0), 4.5e-9 (q4_0), median ~1e-9; rows with one
 * dominant weight ~1e-15. 2e-8 is 8x the expected bound; the f32 kernel itself is ~1e-15 from exact.
 */
const NMSE_TOL = 2e-8;

type Fmt = 'q4_0' | 'q8_0';
const BLOCK_BYTES: Record<Fmt, number> = { q4_0: 18, q8_0: 34 };
type Fn = (...a: number[]) => void;

/** Random blocks: f16 scales of either sign in about [2^-10, 2) (1 in 20 zero), random level bytes (q8_0 -128 included). */
function randomV(fmt: Fmt, T: number, D: number, rng: Prng): Uint8Array {
  const bb = BLOCK_BYTES[fmt];
  const out = new Uint8Array(T * (D / 32) * bb);
  for (let p = 0; p < out.length; p += bb) {
    const zero = rng.next() < 0.05;
    const bits = zero ? 0 : (rng.int(2) << 15) | ((5 + rng.int(11)) << 10) | rng.int(1024);
    out[p] = bits & 0xff;
    out[p + 1] = bits >> 8;
    for (let j = 2; j < bb; j++) out[p + j] = rng.int(256);
  }
  return out;
}

type WeightKind = 'flat' | 'peaked' | 'dominant' | 'tiny' | 'masked' | 'zeros';
const KINDS: readonly WeightKind[] = ['flat', 'peaked', 'dominant', 'tiny', 'masked', 'zeros'];

/** One row of T softmax-like weights (exp(z - max z)) of the given kind. */
function weightRow(kind: WeightKind, T: number, rng: Prng): Float32Array {
  const w = new Float32Array(T);
  if (kind === 'zeros') return w;
  const sigma = kind === 'peaked' ? 3 : 1;
  const z = Array.from({ length: T }, () => rng.normal() * sigma);
  if (kind === 'dominant') z[rng.int(T)] = 25;
  const max = z.reduce((a, b) => Math.max(a, b), -Infinity);
  // tiny: a chunk far below the running max (still well above f32's subnormals once times d).
  const k = kind === 'tiny' ? 1e-20 : 1;
  for (let t = 0; t < T; t++) w[t] = k * Math.exp(z[t]! - max);
  if (kind === 'masked') {
    const lo = rng.int(T + 1);
    const hi = lo + rng.int(T + 1 - lo);
    for (let t = 0; t < T; t++) if (t < lo || t >= hi) w[t] = 0;
  }
  return w;
}

interface Case {
  fmt: Fmt;
  G: number;
  D: number;
  T: number;
  wStride: number;
  kinds: WeightKind[];
  w: Float32Array; // [G, wStride]
  v: Uint8Array;
  acc0: Float32Array; // [G, D]
}

function makeCase(fmt: Fmt, G: number, D: number, T: number, seed: number, acc0Scale = 0): Case {
  const rng = new Prng(seed);
  const wStride = T + rng.int(9);
  const w = new Float32Array(G * wStride).fill(NaN); // columns past T are never read
  const kinds = Array.from({ length: G }, (_, g) => KINDS[(g + seed) % KINDS.length]!);
  for (let g = 0; g < G; g++) w.set(weightRow(kinds[g]!, T, rng), g * wStride);
  const acc0 = new Float32Array(G * D);
  if (acc0Scale) for (let i = 0; i < acc0.length; i++) acc0[i] = rng.normal() * acc0Scale;
  return { fmt, G, D, T, wStride, kinds, w, v: randomV(fmt, T, D, rng), acc0 };
}

/** Runs `<fmt>_accum` or `<fmt>_accum_w16` on a copy of the case in arena memory; returns acc. */
function run(k: WasmKernels, c: Case, fn: string): Float32Array {
  const { G, D, T } = c;
  const guard = 4 * D; // a row of canaries either side of acc
  const wA = k.arena.alloc(c.w.byteLength);
  const vA = k.arena.alloc(c.v.byteLength);
  const aA = k.arena.alloc(c.acc0.byteLength + 2 * guard * 4);
  const tile = k.arena.alloc(k.exports.tileBytes(D));
  const f32 = k.arena.f32();
  const u8 = k.arena.u8();
  f32.set(c.w, wA / 4);
  u8.set(c.v, vA);
  f32.fill(12345.5, aA / 4, aA / 4 + guard);
  f32.set(c.acc0, aA / 4 + guard);
  f32.fill(12345.5, aA / 4 + guard + G * D, aA / 4 + 2 * guard + G * D);
  u8.fill(0xa5, tile, tile + k.exports.tileBytes(D)); // results must not depend on the tile's contents
  (k.exports[fn] as Fn)(wA, c.wStride, G, D, vA, T, aA + guard * 4, tile);
  const out = f32.slice(aA / 4 + guard, aA / 4 + guard + G * D);
  const before = f32.subarray(aA / 4, aA / 4 + guard);
  const after = f32.subarray(aA / 4 + guard + G * D, aA / 4 + 2 * guard + G * D);
  assert.ok(before.every((x) => x === 12345.5) && after.every((x) => x === 12345.5), `${fn}: wrote outside acc`);
  assert.deepEqual(u8.slice(vA, vA + c.v.length), c.v, `${fn}: V changed`);
  for (const a of [wA, vA, aA, tile]) k.arena.free(a);
  return out;
}

/** Per-row NMSE of a against reference b (rows whose reference is all zero must match exactly: NaN otherwise). */
function rowNmse(a: Float32Array, b: Float32Array, G: number, D: number): number[] {
  const out: number[] = [];
  for (let g = 0; g < G; g++) {
    let num = 0;
    let den = 0;
    for (let c = g * D; c < (g + 1) * D; c++) {
      num += (a[c]! - b[c]!) ** 2;
      den += b[c]! ** 2;
    }
    out.push(den > 0 ? num / den : num === 0 ? 0 : NaN);
  }
  return out;
}

/** The kernels' definition in JS, float32 step by step (see assembly/attention/accum_w16.ts): the bit-exact model. */
function model(c: Case): Float32Array {
  const { fmt, G, D, T, wStride, w, v } = c;
  const f = Math.fround;
  const bb = BLOCK_BYTES[fmt];
  const nb = D / 32;
  const acc = Float32Array.from(c.acc0);
  const si = new Float64Array(32);
  for (let g = 0; g < G; g++) {
    for (let t0 = 0; t0 < T; t0 += 32) {
      const n = Math.min(32, T - t0);
      for (let b = 0; b < nb; b++) {
        const blk = (t: number) => ((t0 + t) * nb + b) * bb;
        const s = new Float64Array(32);
        let amax = 0;
        for (let t = 0; t < n; t++) {
          const p = blk(t);
          s[t] = f(w[g * wStride + t0 + t]! * fp16ToFp32(v[p]! | (v[p + 1]! << 8)));
          amax = Math.max(amax, Math.abs(s[t]!));
        }
        const inv = amax > 0 ? f(32767 / amax) : 0;
        const scale = amax > 0 ? f(amax * f(1 / 32767)) : 0;
        for (let t = 0; t < 32; t++) si[t] = f(f(s[t]! * inv) + 12582912) - 12582912;
        for (let ch = 0; ch < 32; ch++) {
          let isum = 0; // exact: |isum| < 2^31
          for (let t = 0; t < n; t++) {
            const p = blk(t) + 2;
            const level = fmt === 'q8_0' ? (v[p + ch]! << 24) >> 24 : ch < 16 ? (v[p + ch]! & 15) - 8 : (v[p + ch - 16]! >> 4) - 8;
            isum += si[t]! * level;
          }
          const i = g * D + b * 32 + ch;
          acc[i] = f(acc[i]! + f(f(isum) * scale));
        }
      }
    }
  }
  return acc;
}

const FORMATS: readonly Fmt[] = ['q4_0', 'q8_0'];

test('accum_w16: NMSE against the f32 accum kernels is within NMSE_TOL (G, D, T grid, softmax-like weights)', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable in this build');
  let seed = 1;
  for (const fmt of FORMATS) {
    let worst = 0;
    for (const G of [1, 2, 3, 4, 5, 7, 8]) {
      for (const D of [32, 64, 128, 256]) {
        for (const T of [1, 2, 31, 32, 33, 255, 4099]) {
          const c = makeCase(fmt, G, D, T, seed++);
          const ref = run(k, c, `${fmt}_accum`);
          const got = run(k, c, `${fmt}_accum_w16`);
          const e = rowNmse(got, ref, G, D);
          for (let g = 0; g < G; g++) {
            assert.ok(e[g]! <= NMSE_TOL, `${fmt} G=${G} D=${D} T=${T} row ${g} (${c.kinds[g]}): NMSE ${e[g]}`);
            worst = Math.max(worst, e[g]!);
          }
        }
      }
    }
    assert.ok(worst > 0, `${fmt}: weights are rounded, so some error is expected`);
    t.diagnostic(`${fmt}: worst row NMSE ${worst.toExponential(2)} (NMSE_TOL ${NMSE_TOL})`);
  }
});

test('accum_w16: bit-identical to the float32 model of its definition (exact integer sums, accumulates into acc)', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable in this build');
  let seed = 1000;
  for (const fmt of FORMATS) {
    for (const G of [1, 3, 4, 6, 9]) {
      for (const D of [32, 128]) {
        for (const T of [1, 2, 31, 33, 97]) {
          const c = makeCase(fmt, G, D, T, seed++, 1);
          const got = run(k, c, `${fmt}_accum_w16`);
          assert.deepEqual(got, model(c), `${fmt} G=${G} D=${D} T=${T}`);
        }
      }
    }
  }
});

test('accum_w16: extreme levels (q8_0 -128 and 127, q4_0 0 and 15) at full-scale weights stay exact (no i32 overflow)', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable in this build');
  const G = 4;
  const D = 64;
  const T = 64;
  for (const fmt of FORMATS) {
    for (const byte of fmt === 'q8_0' ? [0x80, 0x7f] : [0x00, 0xff]) {
      for (const dBits of [0x3c00, 0xbc00]) {
        const c = makeCase(fmt, G, D, T, 7);
        c.w.fill(1); // every si = +-32767: the largest lane sums the bound in accum_w16.ts allows for
        const bb = BLOCK_BYTES[fmt];
        for (let p = 0; p < c.v.length; p += bb) {
          c.v[p] = dBits & 0xff; // d = +-1.0
          c.v[p + 1] = dBits >> 8;
          c.v.fill(byte, p + 2, p + bb);
        }
        const got = run(k, c, `${fmt}_accum_w16`);
        assert.deepEqual(got, model(c), `${fmt} byte ${byte}`);
        const level = fmt === 'q8_0' ? (byte << 24) >> 24 : (byte & 15) - 8;
        const want = level * T * (dBits === 0x3c00 ? 1 : -1);
        for (const x of got) assert.ok(Math.abs(x - want) <= Math.abs(want) * 1e-6, `${fmt} byte ${byte}: ${x} vs ${want}`);
      }
    }
  }
});

test('accum_w16: zero weights leave acc unchanged; more than 64 rows (tile chunks) match the f32 kernel', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable in this build');
  for (const fmt of FORMATS) {
    const z = makeCase(fmt, 5, 64, 70, 11, 1);
    for (let i = 0; i < z.w.length; i++) z.w[i] = 0;
    assert.deepEqual(run(k, z, `${fmt}_accum_w16`), z.acc0, `${fmt}: zero weights`);
    for (const G of [65, 130]) {
      const c = makeCase(fmt, G, 64, 45, 20 + G);
      const e = rowNmse(run(k, c, `${fmt}_accum_w16`), run(k, c, `${fmt}_accum`), G, 64);
      assert.ok(Math.max(...e) <= NMSE_TOL, `${fmt} G=${G}: NMSE ${Math.max(...e)}`);
      const m = model(c);
      assert.deepEqual(run(k, c, `${fmt}_accum_w16`), m, `${fmt} G=${G}: model`);
    }
  }
});
