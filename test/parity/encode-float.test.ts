// The wasm f16 and bf16 encoders (SIMD bit math) against the reference conversions (numeric/half.ts, ggml's
// rounding) on every rounding boundary class of each format, both signs, and a few million random f32
// bit patterns (every NaN payload and subnormal included). Inputs are written as bits into arena memory,
// so NaN payloads reach both encoders unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasKernel, lookupKernel } from '../../src/kernels/attention/registry.js';
import { wasmKernels } from '../../src/kernels/runtime/wasm.js';
import { sharedArena } from '../../src/kernels/runtime/arena.js';
import { F16_MAX } from '../../src/formats/scale16.js';
import { Prng } from '../../src/numeric/prng.js';

/** Values per row: the smallest head dim the wasm kernels take. */
const D = 16;
/** Random patterns per format, encoded in chunks of CHUNK. */
const RANDOM = 1 << 22;
const CHUNK = 1 << 18;
const SIGN = 0x80000000;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const bitsOf = (x: number): number => ((f32[0] = x), u32[0]!);

/** The pattern and its two f32 neighbours (one ulp below and above), both signs. */
function around(bits: number[]): number[] {
  return bits.flatMap((b) => [b - 1, b, b + 1]).flatMap((b) => [b >>> 0, (b | SIGN) >>> 0]);
}

/** Specials shared by both formats: zeros, infinities, quiet and signalling NaNs with payloads, f32 subnormals. */
const SPECIALS = [0, bitsOf(Infinity), bitsOf(Infinity) + 1, bitsOf(Infinity) | (1 << 22), bitsOf(Infinity) | 0x7fffff, 1, 0x7fffff, 0x800000];

/** fp16: 10 stored significand bits, normal exponents -14..15. */
const HALF_BITS = 10;
const HALF_EMIN = -14;
const HALF_EMAX = 15;

/** f16 boundary classes: exact ties at every exponent (even and odd mantissa), 65504, the overflow tie, subnormals. */
function f16Cases(): number[] {
  const out: number[] = [];
  const steps = 2 ** HALF_BITS; // significand steps per binade
  for (let e = HALF_EMIN; e <= HALF_EMAX; e++) {
    const ulp = 2 ** (e - HALF_BITS);
    for (const m of [0, 1, 2, steps / 2 - 1, steps / 2, steps - 2, steps - 1]) {
      const base = (1 + m / steps) * 2 ** e;
      out.push(bitsOf(base), bitsOf(base + ulp / 2));
    }
  }
  // Subnormal halves: every m * 2^-24 and every tie (m + 1/2) * 2^-24, from half the smallest subnormal up.
  const sub = 2 ** (HALF_EMIN - HALF_BITS);
  for (let m = 0; m < steps; m++) out.push(bitsOf(m * sub), bitsOf((m + 0.5) * sub));
  const maxUlp = 2 ** (HALF_EMAX - HALF_BITS);
  out.push(bitsOf(F16_MAX), bitsOf(F16_MAX + maxUlp / 2), bitsOf(F16_MAX + maxUlp), bitsOf(sub), bitsOf(sub / 2), bitsOf(2 ** HALF_EMIN));
  return around([...out, ...SPECIALS]);
}

/** f32 layout: 23 significand bits under 8 exponent bits; bf16 keeps the top 7 significand bits. */
const F32_MANT = 23;
const F32_EXP_ALL = 0xff;
const BF16_DROPPED = 16;

/** bf16 boundary classes: ties of the 16 dropped bits at every exponent (even and odd kept bit), the overflow tie. */
function bf16Cases(): number[] {
  const out: number[] = [];
  const tie = 1 << (BF16_DROPPED - 1);
  const keptMax = (1 << (F32_MANT - BF16_DROPPED)) - 1;
  for (let e = 0; e < F32_EXP_ALL; e++) {
    for (const kept of [0, 1, 2, keptMax - 1, keptMax]) {
      const bits = (e << F32_MANT) | (kept << BF16_DROPPED);
      out.push((bits | tie) >>> 0, bits >>> 0);
    }
  }
  return around([...out, ...SPECIALS]);
}

/** Encodes the f32 bit patterns with the wasm and the reference kernel; returns the first mismatch or ''. */
function compare(id: string, bits: Uint32Array, stride = D): string {
  const a = sharedArena();
  const rows = Math.ceil(bits.length / D);
  const srcOff = a.alloc(rows * stride * 4);
  const dstOff = a.alloc(rows * D * 2);
  try {
    const srcBits = new Uint32Array(a.u8().buffer, srcOff, rows * stride);
    srcBits.fill(0);
    for (let i = 0; i < bits.length; i++) srcBits[Math.floor(i / D) * stride + (i % D)] = bits[i]!;
    const src = new Float32Array(a.u8().buffer, srcOff, rows * stride);
    const want = new Uint8Array(rows * D * 2);
    lookupKernel(id, 'encode', 'ref').fn(src, 0, stride, rows, D, want, 0);
    lookupKernel(id, 'encode', 'wasm').fn(src, 0, stride, rows, D, a.u8(), dstOff);
    const got = a.u8().subarray(dstOff, dstOff + want.length);
    for (let i = 0; i < bits.length; i++) {
      const g = got[2 * i]! | (got[2 * i + 1]! << 8);
      const w = want[2 * i]! | (want[2 * i + 1]! << 8);
      if (g !== w) return `input 0x${bits[i]!.toString(16)}: wasm 0x${g.toString(16)}, reference 0x${w.toString(16)}`;
    }
    return '';
  } finally {
    a.free(srcOff);
    a.free(dstOff);
  }
}

function randomBits(rng: Prng, n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rng.next() * 2 ** 32);
  return out;
}

for (const [id, cases] of [
  ['f16', f16Cases],
  ['bf16', bf16Cases],
] as const) {
  test(`${id} wasm encoder equals the reference on every boundary class`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
    assert.ok(hasKernel(id, 'encode', 'wasm'), `${id} has no wasm encoder`);
    assert.equal(compare(id, Uint32Array.from(cases())), '');
  });

  test(`${id} wasm encoder equals the reference on random f32 bit patterns (and strided rows)`, (t) => {
    if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
    const rng = new Prng(id.length * 7919);
    for (let done = 0; done < RANDOM; done += CHUNK) assert.equal(compare(id, randomBits(rng, CHUNK)), '');
    assert.equal(compare(id, randomBits(rng, 64 * D), D + 8), '');
  });
}
