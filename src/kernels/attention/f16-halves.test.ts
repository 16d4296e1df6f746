// f16_scores / f16_accum (assembly/attention/float.ts) read K and V halves in place, with q and the weights
// scaled by 2^112; a q or weight row of 2^16 and up sends the call to the unscaled form, and scores calls of 32
// rows and more (prefill units) decode K into the tile first. Every form must give every row the same bits (a
// row's result may not depend on the rows beside it), and all must be the exact products: checked here against
// float64 sums, with the tile showing which form ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wasmKernels, type WasmKernels } from '../runtime/wasm.js';
import { fp16ToFp32 } from '../../numeric/half.js';
import { Prng } from '../../numeric/prng.js';

type Fn = (...a: number[]) => void;
const CANARY = 0xa5;

/** T x D random finite halves of every class (both signs, subnormals, zeros, 2^-14 .. 65504). */
function randomHalves(T: number, D: number, rng: Prng, specials = false): Uint16Array {
  const h = new Uint16Array(T * D);
  for (let i = 0; i < h.length; i++) {
    const exp = rng.int(31); // 0 = subnormal or zero
    h[i] = (rng.int(2) << 15) | (exp << 10) | rng.int(1024);
    if (specials && rng.next() < 0.02) h[i] = rng.int(2) ? 0x7c00 : 0xfc00; // +-Inf
  }
  return h;
}

interface Mem {
  k: WasmKernels;
  at(bytes: number): number;
  free(): void;
}
function mem(k: WasmKernels): Mem {
  const held: number[] = [];
  return {
    k,
    at: (bytes) => {
      const a = k.arena.alloc(bytes);
      held.push(a);
      return a;
    },
    free: () => {
      for (const a of held) k.arena.free(a);
    },
  };
}

/** Runs f16_scores on rows [from, G) of q; returns [G - from, T] scores and whether the tile was written. */
function scores(m: Mem, q: Float32Array, G: number, from: number, D: number, halves: Uint16Array, T: number): { s: Float32Array; tileUsed: boolean } {
  const { k } = m;
  const qA = m.at(q.byteLength);
  const kA = m.at(halves.byteLength);
  const oA = m.at(G * T * 4);
  const tb = k.exports.tileBytes(D);
  const tile = m.at(tb);
  k.arena.f32().set(q, qA / 4);
  new Uint16Array(k.arena.memory.buffer, kA, halves.length).set(halves);
  k.arena.u8().fill(CANARY, tile, tile + tb);
  (k.exports['f16_scores'] as Fn)(qA + from * D * 4, G - from, D, kA, T, oA, T, tile);
  const s = k.arena.f32().slice(oA / 4, oA / 4 + (G - from) * T);
  return {
    s,
    tileUsed: k.arena
      .u8()
      .subarray(tile, tile + tb)
      .some((b) => b !== CANARY),
  };
}

/** Runs f16_accum on rows [from, G) of w (acc starting at acc0); returns [G - from, D] and whether the tile was written. */
function accum(
  m: Mem,
  w: Float32Array,
  wStride: number,
  G: number,
  from: number,
  D: number,
  halves: Uint16Array,
  T: number,
  acc0: Float32Array,
): { a: Float32Array; tileUsed: boolean } {
  const { k } = m;
  const wA = m.at(w.byteLength);
  const vA = m.at(halves.byteLength);
  const aA = m.at(acc0.byteLength);
  const tb = k.exports.tileBytes(D);
  const tile = m.at(tb);
  k.arena.f32().set(w, wA / 4);
  new Uint16Array(k.arena.memory.buffer, vA, halves.length).set(halves);
  k.arena.f32().set(acc0, aA / 4);
  k.arena.u8().fill(CANARY, tile, tile + tb);
  (k.exports['f16_accum'] as Fn)(wA + from * wStride * 4, wStride, G - from, D, vA, T, aA + from * D * 4, tile);
  const a = k.arena.f32().slice(aA / 4 + from * D, aA / 4 + G * D);
  return {
    a,
    tileUsed: k.arena
      .u8()
      .subarray(tile, tile + tb)
      .some((b) => b !== CANARY),
  };
}

const bits = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));

/**
 * Largest |a[i] - exact| / sum |terms| over the entries, exact being init[i] plus the float64 sum of the products
 * each(i) lists: float32 sums of exact products stay within about (terms) x 2^-24 of it.
 */
function worstRelative(a: Float32Array, init: ArrayLike<number>, each: (i: number, add: (p: number) => void) => void): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    let exact = init[i]!;
    let mag = Math.abs(init[i]!);
    each(i, (p) => {
      exact += p;
      mag += Math.abs(p);
    });
    worst = Math.max(worst, Math.abs(a[i]! - exact) / Math.max(mag, 1e-300));
  }
  return worst;
}

test('f16 kernels: a row scores the same bits whether its call runs scaled or not, and exactly', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('no wasm kernels (KVPACK_NO_WASM or no SIMD)');
  const rng = new Prng(24);
  for (const [G, D, T] of [
    [4, 128, 37],
    [3, 64, 50],
    [20, 256, 9], // more rows than one tile of scaled q (16 at D 256)
    [2, 256, 17],
  ] as const) {
    const m = mem(k);
    try {
      const q = new Float32Array(G * D).map(() => rng.normal() * 3);
      const halves = randomHalves(T, D, rng);
      const small = scores(m, q, G, 1, D, halves, T);
      q[5] = 70000; // row 0 reaches 2^16: the whole call takes the unscaled form
      const big = scores(m, q, G, 0, D, halves, T);
      assert.ok(small.tileUsed, `G ${G} D ${D}: the scaled form did not run`);
      assert.ok(!big.tileUsed, `G ${G} D ${D}: a q of 70000 still ran scaled`);
      assert.deepEqual(bits(big.s.subarray(T)), bits(small.s), `G ${G} D ${D}: rows 1.. differ between the two forms`);
      // Entry i = g*T + t: the dot of q row g with half row t.
      const dot = (i: number, add: (p: number) => void) => {
        const [g, t2] = [Math.floor(i / T), i % T];
        for (let c = 0; c < D; c++) add(q[g * D + c]! * fp16ToFp32(halves[t2 * D + c]!));
      };
      const err = worstRelative(big.s, new Float64Array(G * T), dot);
      assert.ok(err < D * 2 ** -24, `G ${G} D ${D}: scores off the exact products by ${err} of their magnitude`);
    } finally {
      m.free();
    }
  }
});

test('f16 kernels: a row accumulates the same bits whether its call runs scaled or not, and exactly', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('no wasm kernels (KVPACK_NO_WASM or no SIMD)');
  const rng = new Prng(25);
  for (const [G, D, T] of [
    [4, 128, 150], // more tokens than one run of scaled weights (64 at D 128)
    [3, 64, 41],
    [33, 128, 70],
    [2, 256, 5],
  ] as const) {
    const m = mem(k);
    try {
      const wStride = T + 3;
      const w = new Float32Array(G * wStride).map(() => Math.exp(-Math.abs(rng.normal()) * 4));
      const halves = randomHalves(T, D, rng);
      const acc0 = new Float32Array(G * D).map(() => rng.normal());
      const small = accum(m, w, wStride, G, 1, D, halves, T, acc0);
      w[2] = 1e5; // row 0 weighs 2^16 and up: the unscaled form
      const big = accum(m, w, wStride, G, 0, D, halves, T, acc0);
      assert.ok(small.tileUsed, `G ${G} D ${D}: the scaled form did not run`);
      assert.ok(!big.tileUsed, `G ${G} D ${D}: a weight of 1e5 still ran scaled`);
      assert.deepEqual(bits(big.a.subarray(D)), bits(small.a), `G ${G} D ${D}: rows 1.. differ between the two forms`);
      // Entry i = g*D + c: acc0 plus channel c of the weighted sum of row g.
      const sum = (i: number, add: (p: number) => void) => {
        const [g, c] = [Math.floor(i / D), i % D];
        for (let t2 = 0; t2 < T; t2++) add(w[g * wStride + t2]! * fp16ToFp32(halves[t2 * D + c]!));
      };
      const err = worstRelative(big.a, acc0, sum);
      assert.ok(err < T * 2 ** -24, `G ${G} D ${D}: sums off the exact products by ${err} of their magnitude`);
    } finally {
      m.free();
    }
  }
});

test('f16 scores: calls of 32 rows and more decode K into the tile and give each row the in-place bits', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('no wasm kernels (KVPACK_NO_WASM or no SIMD)');
  const rng = new Prng(27);
  // Odd row counts and token counts off the 4-token passes; the tile holds 64 tokens at D 64 and 32 at D 128.
  for (const [G, D, T] of [
    [63, 64, 130],
    [33, 128, 37],
    [64, 128, 3],
  ] as const) {
    const m = mem(k);
    try {
      const q = new Float32Array(G * D).map(() => rng.normal() * 3);
      q[7 * D + 3] = 70000; // one row past the scaled form's range: the tiled form takes q as it is for every row
      const halves = randomHalves(T, D, rng, true);
      const tiled = scores(m, q, G, 0, D, halves, T);
      assert.ok(tiled.tileUsed, `G ${G} D ${D}: the tiled form did not decode K into the tile`);
      // The same rows four at a time read the halves in place (row 7's call unscaled, the others scaled).
      for (let g0 = 0; g0 < G; g0 += 4) {
        const n = Math.min(4, G - g0);
        const part = scores(m, q.subarray(g0 * D, (g0 + n) * D), n, 0, D, halves, T);
        assert.deepEqual(bits(tiled.s.subarray(g0 * T, (g0 + n) * T)), bits(part.s), `G ${G} D ${D}: rows ${g0}..${g0 + n - 1} differ from the in-place form`);
      }
      const dot = (i: number, add: (p: number) => void) => {
        const [g, t2] = [Math.floor(i / T), i % T];
        for (let c = 0; c < D; c++) {
          const h = halves[t2 * D + c]!;
          // Inf halves read as 65536 with their sign in every form (the test below).
          add(q[g * D + c]! * ((h & 0x7fff) === 0x7c00 ? (h & 0x8000 ? -65536 : 65536) : fp16ToFp32(h)));
        }
      };
      const err = worstRelative(tiled.s, new Float64Array(G * T), dot);
      assert.ok(err < D * 2 ** -24, `G ${G} D ${D}: scores off the exact products by ${err} of their magnitude`);
    } finally {
      m.free();
    }
  }
});

test('f16 kernels: Inf halves read as the same large finite value in both forms', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('no wasm kernels (KVPACK_NO_WASM or no SIMD)');
  const rng = new Prng(26);
  const [G, D, T] = [3, 64, 20];
  const m = mem(k);
  try {
    const q = new Float32Array(G * D).map(() => rng.normal());
    const halves = randomHalves(T, D, rng, true);
    assert.ok(
      halves.some((h) => (h & 0x7fff) === 0x7c00),
      'no Inf half was drawn',
    );
    const small = scores(m, q, G, 1, D, halves, T);
    q[0] = -1e6;
    const big = scores(m, q, G, 0, D, halves, T);
    assert.deepEqual(bits(big.s.subarray(T)), bits(small.s));
    assert.ok(small.s.every(Number.isFinite), 'an Inf half made a score non-finite');
  } finally {
    m.free();
  }
});
