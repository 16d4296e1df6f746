// The wasm tern and int2s encoders against the reference bytes: random rows of several shapes, magnitude
// ties (the int2s rank breaks them by position), zeros of both signs, tiny/subnormal/huge scales, +-Inf,
// and NaNs at every position of a block (the reference's order then comes from V8's sort; jsorder.ts).
// Inputs go through both wasm entry paths: arena rows with a stride, and JS rows (staged).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getFormat } from '../../src/formats/registry.js';
import { bytesFor } from '../../src/formats/format.js';
import { hasKernel, lookupKernel } from '../../src/kernels/attention/registry.js';
import { wasmKernels } from '../../src/kernels/runtime/wasm.js';
import { sharedArena } from '../../src/kernels/runtime/arena.js';
import { Prng } from '../../src/numeric/prng.js';

const FORMATS = ['tern_g32', 'tern_g8', 'tern_g4', 'int2s_g8', 'int2s_g4'];
const D = 128;
const QK = 32;

/** Row kinds; `rows` cycles through them. */
const KINDS = 14;

/** One row of kind `kind`; `at` is a random block position for the Inf and NaN kinds. */
function row(kind: number, rng: Prng): Float32Array {
  const r = rng.normals(D);
  const at = rng.int(QK);
  switch (kind % KINDS) {
    case 0:
      return r;
    case 1:
      return r.map((x, i) => (i % 9 === 4 ? x * 20 : x)); // outliers
    case 2:
      return r.map((x) => Math.round(x * 2) / 2); // few magnitudes: many ties
    case 3:
      return r.map((_, i) => (i % 4 ? 1.5 : -1.5)); // one magnitude, mixed signs
    case 4:
      return r.map((x, i) => (i % 7 === 1 ? 0 : i % 5 === 2 ? -0 : x)); // zeros of both signs
    case 5:
      return new Float32Array(D); // all zero
    case 6:
      return r.map((x) => x * 1e-30);
    case 7:
      return r.map((x) => x * 1e-42); // f32 subnormals
    case 8:
      return r.map((x) => x * 3e37); // sums overflow f32 (not f64); scales saturate at 65504
    case 9:
      return r.map((x, i) => (i % QK === at ? Infinity : i % QK === (at + 5) % QK ? -Infinity : x));
    case 10:
      return r.map((x, i) => (i % QK === at ? NaN : x)); // one NaN per block
    case 11:
      return r.map((x, i) => (i % QK === at || i % 11 === 3 ? NaN : Math.round(x))); // NaNs among ties
    case 12:
      return r.map((x, i) => (i % QK === at ? NaN : i % 2 ? Infinity : x));
    default:
      return r.map(() => NaN);
  }
}

function rows(n: number, seed: number): Float32Array {
  const rng = new Prng(seed);
  const out = new Float32Array(n * D);
  for (let t = 0; t < n; t++) out.set(row(t, rng), t * D);
  return out;
}

/** First differing byte between the wasm and the reference encoding of `tokens` rows, or -1. */
function firstDiff(id: string, src: Float32Array, srcOff: number, stride: number, tokens: number): { at: number; got: number; want: number } {
  const f = getFormat(id);
  const a = sharedArena();
  const bytes = bytesFor(f, tokens, D);
  const want = new Uint8Array(bytes);
  lookupKernel(id, 'encode', 'ref').fn(src, srcOff, stride, tokens, D, want, 0);
  const off = a.alloc(bytes);
  try {
    lookupKernel(id, 'encode', 'wasm').fn(src, srcOff, stride, tokens, D, a.u8(), off);
    const got = a.u8().subarray(off, off + bytes);
    const at = got.findIndex((b, i) => b !== want[i]);
    return { at, got: got[at] ?? -1, want: want[at] ?? -1 };
  } finally {
    a.free(off);
  }
}

const describe = (id: string, d: { at: number; got: number; want: number }) =>
  `${id}: byte ${d.at} (block ${Math.floor(d.at / getFormat(id).blockBytes)}): wasm ${d.got}, reference ${d.want}`;

for (const id of FORMATS) {
  test(`${id} wasm encoder equals the reference (JS rows, staged)`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
    assert.ok(hasKernel(id, 'encode', 'wasm'), `${id} has no wasm encoder`);
    const tokens = KINDS * QK; // each kind in QK rows, at random positions
    const d = firstDiff(id, rows(tokens, id.length * 31 + 7), 0, D, tokens);
    assert.equal(d.at, -1, describe(id, d));
  });

  test(`${id} wasm encoder equals the reference (arena rows with a stride)`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
    const tokens = 3 * KINDS;
    const stride = D + 32;
    const a = sharedArena();
    const off = a.alloc(tokens * stride * 4);
    try {
      const src = new Float32Array(a.u8().buffer, off, tokens * stride);
      const x = rows(tokens, id.length * 17 + 3);
      for (let tk = 0; tk < tokens; tk++) src.set(x.subarray(tk * D, (tk + 1) * D), tk * stride);
      const d = firstDiff(id, new Float32Array(a.u8().buffer, off, tokens * stride), 0, stride, tokens);
      assert.equal(d.at, -1, describe(id, d));
    } finally {
      a.free(off);
    }
  });

  test(`${id} wasm encoder equals the reference with a NaN at every block position`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
    const rng = new Prng(id.length);
    const tokens = 2 * QK;
    const x = new Float32Array(tokens * D);
    for (let tk = 0; tk < tokens; tk++) {
      const r = tk < QK ? rng.normals(D) : rng.normals(D).map((v) => Math.round(v));
      for (let i = 0; i < D; i++) if (i % QK === tk % QK) r[i] = NaN;
      x.set(r, tk * D);
    }
    const d = firstDiff(id, x, 0, D, tokens);
    assert.equal(d.at, -1, describe(id, d));
  });
}
