// Adversarial blocks for the wasm encoders and the tern decoder beyond the gate's grid: tiny and subnormal
// scales, f32 overflow of max - min, +-Inf, -0, one NaN; and random bytes for the tern and int2s decoders
// (digits >= 243, out-of-range membership ranks, any f16 scale) and ggml's blocks (any f16 scale: the wasm
// scale decode is branch-free bit math). Each must match the reference bit for bit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getFormat } from '../../src/formats/registry.js';
import { bytesFor, type KvFormat } from '../../src/formats/format.js';
import { hasKernel, lookupKernel } from '../../src/kernels/attention/registry.js';
import { wasmKernels } from '../../src/kernels/runtime/wasm.js';
import { Prng } from '../../src/numeric/prng.js';

const ENCODERS = [
  'q4_1',
  'q5_0',
  'q5_1',
  'iq4_nl',
  'nf4',
  'int4_g32',
  'int4_g64',
  'int4_g128',
  'int2_g32',
  'int2_g64',
  'int2_g128',
  'int4c_g32',
  'int2c_g32',
  'sign_g32',
  'sign_g8',
  'sign_g4',
];
const D = 128;

/** One row of D values per kind (token t of the 32-token group is kind t % KINDS). */
function row(kind: number, rng: Prng): Float32Array {
  const r = rng.normals(D);
  const scaleBy = (s: number) => r.map((x) => x * s);
  switch (kind) {
    case 0:
      return r;
    case 1:
      return scaleBy(1e-30); // tiny: 1/d overflows f32 in the ggml encoders
    case 2:
      return scaleBy(1e-42); // f32 subnormals
    case 3:
      return scaleBy(3e37); // max - min overflows f32; scales saturate at 65504
    // Zeros of both signs, first one at varying lanes: the sign of a zero min/max depends on loop order.
    case 4:
      return r.map((x, i) => (i % 7 === 1 ? 0 : i % 5 === 2 ? -0 : Math.abs(x)));
    case 8:
      return r.map((x, i) => (i % 6 === 3 ? -0 : i % 11 === 4 ? 0 : -Math.abs(x)));
    case 5:
      return r.map((x, i) => (i === 7 ? Infinity : i === 40 ? -Infinity : x));
    case 6:
      return r.map(() => -2.5); // a negative constant
    case 7:
      return r.map((x, i) => (i % 2 ? 70000 : -70000 + x)); // beyond f16's range
    default:
      return r.map((x, i) => (i === 3 ? NaN : x));
  }
}
const KINDS = 10;

function encodeBoth(f: KvFormat, src: Float32Array, tokens: number): { want: Uint8Array; got: Uint8Array } {
  const k = wasmKernels()!;
  const bytes = bytesFor(f, tokens, D);
  const want = new Uint8Array(bytes);
  const ref = lookupKernel(f.id, 'encode', 'ref').fn;
  const fast = lookupKernel(f.id, 'encode', 'wasm').fn;
  const off = k.arena.alloc(bytes);
  const groups = f.axis === 'token' ? [[0, tokens]] : Array.from({ length: tokens / 32 }, (_, g) => [g * 32, 32]);
  for (const [t, n] of groups) {
    const dOff = f.axis === 'token' ? 0 : (t! / 32) * D * f.blockBytes;
    ref(src, t! * D, D, n!, D, want, dOff);
    fast(src, t! * D, D, n!, D, k.arena.u8(), off + dOff);
  }
  const got = k.arena.u8().slice(off, off + bytes);
  k.arena.free(off);
  return { want, got };
}

for (const id of ENCODERS) {
  test(`encode edge: ${id} wasm bytes equal the reference on adversarial blocks`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
    const f = getFormat(id);
    assert.ok(hasKernel(id, 'encode', 'wasm'), `${id} has no wasm encoder`);
    const rng = new Prng(id.length * 97 + 1);
    const tokens = 64;
    const src = new Float32Array(tokens * D);
    // Token axis: each row one kind. Channel axis: kinds vary along a channel's tokens and across groups.
    for (let tok = 0; tok < tokens; tok++) src.set(row((tok + (tok >> 5)) % KINDS, rng), tok * D);
    const { want, got } = encodeBoth(f, src, tokens);
    const first = got.findIndex((b, i) => b !== want[i]);
    assert.equal(first, -1, `first differing byte ${first} (block ${Math.floor(first / f.blockBytes)})`);
  });
}

// Random bytes give every class of f16 scale: both signs, zeros, subnormals, Inf and NaN (exponent 31, 1 in 32).
test('ggml, tern and int2s decode: random bytes decode as the reference', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable in this build');
  for (const id of ['q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'iq4_nl', 'tern_g32', 'tern_g8', 'tern_g4', 'int2s_g8', 'int2s_g4']) {
    const f = getFormat(id);
    const tokens = 200;
    const bytes = bytesFor(f, tokens, D);
    const rng = new Prng(11);
    const off: number = k.arena.alloc(bytes + tokens * D * 4);
    const u8: Uint8Array = k.arena.u8();
    for (let i = 0; i < bytes; i++) u8[off + i] = Math.floor(rng.next() * 256);
    const want = new Float32Array(tokens * D);
    lookupKernel(id, 'decode', 'ref').fn(u8, off, 0, tokens, D, want, 0);
    const got: Float32Array = new Float32Array(u8.buffer, off + bytes, tokens * D);
    lookupKernel(id, 'decode', 'wasm').fn(u8, off, 0, tokens, D, got, 0);
    const bad = want.findIndex((x, i) => !Object.is(x, got[i]));
    assert.equal(bad, -1, `${id}: value ${bad}: ${got[bad]} != ${want[bad]}`);
    k.arena.free(off);
  }
});
