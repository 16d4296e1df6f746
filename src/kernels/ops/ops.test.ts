import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from './reference.js';
import * as wasm from './ops.js';
import { NO_ROPE_SCALING, type RopeScaling } from '../../model/hparams.js';
import { allocInArena, freeInArena } from '../matmul/weights.js';
import { NonFiniteError } from '../../errors.js';
import { wasmFailure, wasmKernels } from '../runtime/wasm.js';
import { Prng } from '../../numeric/prng.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

/** One f32 ulp relative to the value, at its largest (2^-23; a value's ulp is 2^-24..2^-23 of it). */
const ULP = 2 ** -23;
/** exp4 vs Math.exp where e^x is a normal f32 (x in [-87.3, 88.7]): measured max 0.71 ULP (8.4e-8 at x = 70.4; relaxed build, fused Horner steps). */
const EXP_MAX_REL = 1 * ULP;
/** tanh4 vs Math.tanh (softcap with cap 1) over [-10, 10]: measured max 1.19 ULP (1.4e-7 at x = -0.628, just past the polynomial). */
const TANH_MAX_REL = 1.5 * ULP;
/**
 * Gated activations and softcap vs the float64 reference: the exp/tanh error (<= 1.2 ULP) plus four f32
 * roundings (1 + e, the division, the product, the reference's own): <= 3 ULP. GELU adds the error of
 * z = c (g + 0.044715 g^3) (<= 4 ULP: roundings and f32 constants, no cancellation), which the sigmoid
 * g / (1 + e^(-2z)) scales by |2z| / (1 + e^(2z)). 6 ULP covers each with a 1.5x margin.
 */
const ACT_REL = 6 * ULP;
/** Below f32's normal range (and where e^-g overflows f32, g < -88) results differ in absolute terms only. */
const ACT_ABS = 1e-30;
/** The reference's own GELU error: 1 + tanh(z) cancels in float64 for z << 0, to within an f64 ulp of 1 (times g up / 2). */
const GELU_REF_ABS = 2 ** -53;
/**
 * RoPE in f32 (like ggml) vs the float64 reference: two products and a sum each rounded (<= 2^-24 relative
 * to |x0 c| + |x1 s|), plus the reference's rounding: 2^-22 of |x0 c| + |x1 s| leaves a 1.3x margin.
 */
const ROPE_REL = 2 ** -22;
/** RMSNorm: the same float64 operations as the reference, only the order of the float64 sum differs. */
const RMS_REL = ULP;

/** Runs fn over arena copies of `arrays` and returns their contents after; frees the arena memory. */
function inArena(arrays: Float32Array[], fn: (views: Float32Array[]) => void): Float32Array[] {
  const regions = arrays.map((a) => allocInArena('test', Math.max(4, a.length * 4)));
  const buf = wasmKernels()!.arena.memory.buffer;
  const views = arrays.map((a, i) => {
    const v = new Float32Array(buf, regions[i]!.ptr, a.length);
    v.set(a);
    return v;
  });
  fn(views);
  const out = views.map((v) => v.slice());
  for (const r of regions) freeInArena(r.ptr);
  return out;
}

/** Values with a spread of magnitudes: normals times 10^[-3, 2], zeros, exact +-1. */
function values(n: number, rng: Prng): Float32Array {
  const x = rng.normals(n);
  for (let i = 0; i < n; i++) {
    if (i % 17 === 5) x[i] = 0;
    else if (i % 23 === 7) x[i] = i % 2 ? 1 : -1;
    else x[i] = x[i]! * 10 ** (rng.int(6) - 3);
  }
  return x;
}

function within(what: string, got: Float32Array, want: Float32Array, tol: (i: number) => number): void {
  assert.equal(got.length, want.length);
  for (let i = 0; i < got.length; i++) {
    const err = Math.abs(got[i]! - want[i]!);
    assert.ok(err <= tol(i), `${what}[${i}]: wasm ${got[i]} vs reference ${want[i]} (|err| ${err.toExponential(2)} > ${tol(i).toExponential(2)})`);
  }
}

/** Max relative error of an in-place kernel over a grid of x in [lo, hi] vs f (skipping f(x) = 0). */
function maxRel(lo: number, hi: number, count: number, f: (x: number) => number, kernel: (ptr: number, n: number) => void): number {
  const xs = Float32Array.from({ length: count }, (_, i) => lo + ((hi - lo) * i) / (count - 1));
  const [ys] = inArena([xs], ([v]) => kernel(v!.byteOffset, count));
  let max = 0;
  xs.forEach((x, i) => {
    const r = f(x);
    if (r !== 0) max = Math.max(max, Math.abs(ys![i]! - r) / Math.abs(r));
  });
  return max;
}

test('exp4: within 1 ulp of Math.exp over the normal f32 range; underflow, overflow and NaN like Math.exp in f32', { skip }, () => {
  const e = wasmKernels()!.exports;
  const exp = (p: number, n: number) => void e['opExp']!(p, n);
  const rel = Math.max(maxRel(-87.3, 88.7, 1 << 20, Math.exp, exp), maxRel(-1, 1, 1 << 18, Math.exp, exp));
  assert.ok(rel <= EXP_MAX_REL, `exp max relative error ${rel.toExponential(3)}`);
  const [y] = inArena([Float32Array.from([0, -104, -200, 89, 200, NaN, -Infinity, Infinity, -87.5])], ([v]) => exp(v!.byteOffset, v!.length));
  assert.deepEqual([...y!.subarray(0, 8)], [1, 0, 0, Infinity, Infinity, NaN, 0, Infinity]);
  // Subnormal results keep their magnitude (the two-step 2^n scaling never overflows on the way).
  assert.ok(Math.abs(y![8]! - Math.exp(-87.5)) / Math.exp(-87.5) < 1e-5);
});

test('tanh4 (softcap with cap 1): within 1.5 ulp of Math.tanh, including tiny arguments and saturation', { skip }, () => {
  const e = wasmKernels()!.exports;
  const tanh = (p: number, n: number) => void e['opSoftcap']!(p, n, 1);
  const rel = Math.max(maxRel(-10, 10, 1 << 20, Math.tanh, tanh), maxRel(-1e-3, 1e-3, 1 << 16, Math.tanh, tanh));
  assert.ok(rel <= TANH_MAX_REL, `tanh max relative error ${rel.toExponential(3)}`);
  const [y] = inArena([Float32Array.from([0, 1e-30, -1e-30, 50, -50, Infinity, -Infinity, NaN])], ([v]) => tanh(v!.byteOffset, v!.length));
  assert.deepEqual([...y!], [0, Math.fround(1e-30), Math.fround(-1e-30), 1, -1, 1, -1, NaN]);
});

test('rmsNorm: wasm equals the reference within one ulp over odd sizes, in place and not', { skip }, () => {
  const rng = new Prng(11);
  for (const dim of [1, 3, 7, 8, 33, 127, 768]) {
    for (const n of [1, 3]) {
      const x = values(n * dim, rng);
      const w = values(dim, rng);
      const want = new Float32Array(n * dim);
      ref.rmsNorm(want, x, w, n, dim, 1e-5);
      const [, , out] = inArena([x, w, new Float32Array(n * dim)], ([xv, wv, ov]) => wasm.rmsNorm(ov!, xv!, wv!, n, dim, 1e-5));
      within(`rmsNorm dim ${dim} n ${n}`, out!, want, (i) => RMS_REL * Math.abs(want[i]!));
      const [inPlace] = inArena([x, w], ([xv, wv]) => wasm.rmsNorm(xv!, xv!, wv!, n, dim, 1e-5));
      assert.deepEqual(inPlace, out, `rmsNorm dim ${dim}: in place differs`);
    }
  }
});

test('RoPE: wasm equals the reference within the f32 rounding bound, both styles, partial rotary dims, YaRN tables', { skip }, () => {
  const rng = new Prng(12);
  const yarn: RopeScaling = { type: 'yarn', factor: 4, origCtx: 64, attnFactor: 1, betaFast: 32, betaSlow: 1 };
  // [headDim, rotary dims]: tails of 1-3 pairs, dims < headDim, one pair only.
  const shapes = [
    [64, 64],
    [34, 34],
    [10, 6],
    [128, 64],
    [2, 2],
    [26, 18],
  ] as const;
  for (const style of ['norm', 'neox'] as const) {
    for (const [hd, dims] of shapes) {
      for (const scaling of [NO_ROPE_SCALING, yarn]) {
        const rope = new ref.Rope(dims, style, 10000, scaling);
        const n = 5;
        const heads = 3;
        const tab = rope.table([0, 1, 17, 300, 4097]);
        const x = values(n * heads * hd, rng);
        const want = x.slice();
        rope.apply(want, n, heads, hd, tab);
        const [got] = inArena([x, tab.cos, tab.sin], ([xv, c, s]) => wasm.applyRope(rope, xv!, n, heads, hd, { cos: c!, sin: s! }));
        // Per value: its pair's |x0 c| + |x1 s|; values past the rotary dims must be untouched.
        const half = dims / 2;
        const bound = new Float64Array(x.length);
        for (let t = 0; t < n; t++) {
          for (let h = 0; h < heads; h++) {
            const o = (t * heads + h) * hd;
            for (let i = 0; i < half; i++) {
              const a = o + (style === 'norm' ? 2 * i : i);
              const b = a + (style === 'norm' ? 1 : half);
              const c = Math.abs(tab.cos[t * half + i]!);
              const s = Math.abs(tab.sin[t * half + i]!);
              bound[a] = ROPE_REL * (Math.abs(x[a]!) * c + Math.abs(x[b]!) * s);
              bound[b] = ROPE_REL * (Math.abs(x[a]!) * s + Math.abs(x[b]!) * c);
            }
          }
        }
        within(`rope ${style} hd ${hd} dims ${dims} ${scaling.type}`, got!, want, (i) => bound[i]!);
      }
    }
  }
});

test('gated activations: SiLU and tanh-GELU within the activation bound of the reference, odd lengths and extremes', { skip }, () => {
  const rng = new Prng(13);
  for (const act of ['silu', 'gelu'] as const) {
    for (const n of [1, 3, 5, 31, 33, 127, 1000]) {
      const gate = values(n, rng);
      const up = values(n, rng);
      if (n === 1000) [-100, -90, -20, -9, 9, 20, 90, 100].forEach((g, i) => (gate[i * 7] = g));
      const want = gate.slice();
      ref.gatedAct(act, want, up, n);
      const [got] = inArena([gate, up], ([g, u]) => wasm.gatedAct(act, g!, u!, n));
      // GELU: z's relative error, scaled by |2z| / (1 + e^2z) (the sigmoid's log-derivative at 2z).
      const amp = (g: number) => {
        const z2 = 2 * 0.7978845608028654 * (g + 0.044715 * g * g * g);
        return act === 'gelu' ? Math.abs(z2) / (1 + Math.exp(z2)) : 0;
      };
      const refAbs = (i: number) => (act === 'gelu' ? GELU_REF_ABS * Math.abs(gate[i]! * up[i]!) : 0);
      within(`${act} n ${n}`, got!, want, (i) => ACT_REL * (1 + amp(gate[i]!)) * Math.abs(want[i]!) + ACT_ABS + refAbs(i));
    }
  }
});

test('softcap: wasm within the activation bound of the reference', { skip }, () => {
  const rng = new Prng(14);
  for (const n of [1, 7, 33, 1001]) {
    const x = values(n, rng).map((v) => v * 30);
    const want = x.slice();
    ref.softcap(want, 30);
    const [got] = inArena([x], ([v]) => wasm.softcap(v!, 30));
    within(`softcap n ${n}`, got!, want, (i) => ACT_REL * Math.abs(want[i]!) + ACT_ABS);
  }
});

test('residual add, bias rows and scale: bit-identical to the reference', { skip }, () => {
  const rng = new Prng(15);
  for (const n of [1, 3, 5, 33, 127]) {
    const x = values(n, rng);
    const y = values(n, rng);
    const want = x.slice();
    ref.addInPlace(want, y, n);
    const [got] = inArena([x, y], ([xv, yv]) => wasm.addInPlace(xv!, yv!, n));
    assert.deepEqual(got, want, `add n ${n}`);
    const s = Math.sqrt(n + 0.5);
    const wantS = x.slice();
    ref.scale(wantS, s);
    const [gotS] = inArena([x], ([xv]) => wasm.scale(xv!, s));
    assert.deepEqual(gotS, wantS, `scale n ${n}`);
  }
  for (const [rows, dim] of [
    [1, 1],
    [3, 7],
    [4, 33],
  ] as const) {
    const x = values(rows * dim, rng);
    const b = values(dim, rng);
    const want = x.slice();
    ref.addRows(want, b, rows, dim);
    const [got] = inArena([x, b], ([xv, bv]) => wasm.addRows(xv!, bv!, rows, dim));
    assert.deepEqual(got, want, `addRows ${rows} x ${dim}`);
  }
});

test('assertFinite finds the first NaN/Inf at any position; short views and bad shapes are ShapeErrors', { skip }, () => {
  for (const n of [1, 4, 5, 37]) {
    for (const at of [0, n - 1, n >> 1]) {
      for (const bad of [NaN, Infinity, -Infinity]) {
        const x = Float32Array.from({ length: n }, (_, i) => i - 2);
        x[at] = bad;
        if (at + 1 < n) x[n - 1] = NaN;
        inArena([x], ([v]) =>
          assert.throws(
            () => wasm.assertFinite('t', v!),
            (e) => e instanceof NonFiniteError && e.index === at,
          ),
        );
      }
    }
    inArena([Float32Array.from({ length: n }, (_, i) => -3.4e38 + i)], ([v]) => wasm.assertFinite('t', v!));
  }
  inArena([new Float32Array(6), new Float32Array(3)], ([x, w]) => {
    assert.throws(() => wasm.rmsNorm(x!, x!, w!, 3, 3, 1e-5), /needs 9/);
    assert.throws(() => wasm.rmsNorm(x!, x!, w!, 2, 4, 1e-5), /weight 3 != dim 4/);
    assert.throws(() => wasm.gatedAct('silu', x!, w!, 6), /needs 6/);
  });
});

test('arrays outside the arena take the reference path with the same results', () => {
  const rng = new Prng(16);
  const x = values(40, rng);
  const w = values(8, rng);
  const a = new Float32Array(40);
  const b = new Float32Array(40);
  ref.rmsNorm(a, x, w, 5, 8, 1e-6);
  wasm.rmsNorm(b, x, w, 5, 8, 1e-6);
  assert.deepEqual(b, a);
});
