// fp32 <-> fp16 / bf16 conversion: IEEE edge cases and an exhaustive fp16 round trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fp32ToFp16, fp16ToFp32, roundFp16, fp32ToBf16, bf16ToFp32, FP16_TABLE } from './half.js';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function fromBits(u: number): number {
  u32[0] = u;
  return f32[0]!;
}
function bitsOf(x: number): number {
  f32[0] = x;
  return u32[0]!;
}

test('fp16: largest finite value and overflow to Inf', () => {
  assert.equal(fp32ToFp16(65504), 0x7bff);
  assert.equal(fp16ToFp32(0x7bff), 65504);
  assert.equal(fp32ToFp16(65519), 0x7bff); // below the halfway point to 65536
  assert.equal(fp32ToFp16(fromBits(0x477fefff)), 0x7bff); // 65519.998...
  assert.equal(fp32ToFp16(65520), 0x7c00); // exact tie: rounds to even, which is Inf
  assert.equal(fp32ToFp16(-65520), 0xfc00);
  assert.equal(fp32ToFp16(1e10), 0x7c00);
  assert.equal(fp32ToFp16(3.4028234663852886e38), 0x7c00);
  assert.equal(fp32ToFp16(Infinity), 0x7c00);
  assert.equal(fp32ToFp16(-Infinity), 0xfc00);
});

test('fp16: signed zeros, NaN', () => {
  assert.equal(fp32ToFp16(0), 0x0000);
  assert.equal(fp32ToFp16(-0), 0x8000);
  assert.ok(Object.is(fp16ToFp32(0x8000), -0));
  const h = fp32ToFp16(NaN);
  assert.equal(h & 0x7c00, 0x7c00);
  assert.notEqual(h & 0x03ff, 0, 'NaN must not become Inf');
  assert.ok(Number.isNaN(fp16ToFp32(0x7e00)));
  assert.ok(Number.isNaN(fp16ToFp32(0xfc01)));
});

test('fp16: subnormals, underflow and their ties', () => {
  assert.equal(fp32ToFp16(2 ** -14), 0x0400); // smallest normal
  assert.equal(fp32ToFp16(2 ** -24), 0x0001); // smallest subnormal
  assert.equal(fp16ToFp32(0x0001), 2 ** -24);
  assert.equal(fp16ToFp32(0x03ff), 1023 * 2 ** -24);
  assert.equal(fp32ToFp16(2 ** -25), 0x0000); // tie between 0 and 2^-24: even is 0
  assert.equal(fp32ToFp16(fromBits(0x33000001)), 0x0001); // just above the tie
  assert.equal(fp32ToFp16(-(2 ** -25)), 0x8000);
  assert.equal(fp32ToFp16(1.5 * 2 ** -24), 0x0002); // tie between 1 and 2 ulps: even is 2
  assert.equal(fp32ToFp16(2.5 * 2 ** -24), 0x0002); // tie between 2 and 3 ulps: even is 2
  assert.equal(fp32ToFp16(2 ** -26), 0x0000);
  assert.equal(fp32ToFp16(fromBits(0x00000001)), 0x0000); // float32 subnormals vanish
  assert.equal(fp32ToFp16(fromBits(0x387fe000)), 0x0400); // rounds up across into the normal range
});

test('fp16: normal ties round to even', () => {
  assert.equal(fp32ToFp16(1 + 2 ** -11), 0x3c00); // halfway 1 .. 1+2^-10: even is 1
  assert.equal(fp32ToFp16(1 + 3 * 2 ** -11), 0x3c02); // halfway 1+2^-10 .. 1+2^-9: even is up
  assert.equal(fp32ToFp16(fromBits(0x3f800fff)), 0x3c00);
  assert.equal(fp32ToFp16(fromBits(0x3f801001)), 0x3c01);
  assert.equal(fp32ToFp16(2049), 0x6800); // 2048
  assert.equal(fp32ToFp16(2051), 0x6802); // 2052
  assert.equal(roundFp16(2049), 2048);
});

test('fp16: every non-NaN bit pattern survives fp16 -> fp32 -> fp16', () => {
  let checked = 0;
  for (let h = 0; h < 65536; h++) {
    const x = FP16_TABLE[h]!;
    if (Number.isNaN(x)) {
      assert.equal(h & 0x7c00, 0x7c00, `0x${h.toString(16)} decodes to NaN but is not a NaN pattern`);
      continue;
    }
    assert.equal(fp32ToFp16(x), h, `0x${h.toString(16)} -> ${x}`);
    checked++;
  }
  assert.equal(checked, 65536 - 2 * 1023);
});

test('fp16: decoded values are exact (monotone, with the right spacing)', () => {
  // Positive finite patterns increase strictly; the gap doubles at each exponent step.
  for (let h = 1; h < 0x7c00; h++) assert.ok(FP16_TABLE[h]! > FP16_TABLE[h - 1]!, `0x${h.toString(16)}`);
  assert.equal(FP16_TABLE[0x3c00], 1);
  assert.equal(FP16_TABLE[0x3c01]! - 1, 2 ** -10);
});

test('bf16: round to nearest even, overflow, zeros, NaN', () => {
  assert.equal(fp32ToBf16(1), 0x3f80);
  assert.equal(fp32ToBf16(fromBits(0x3f808000)), 0x3f80); // tie: even is down
  assert.equal(fp32ToBf16(fromBits(0x3f818000)), 0x3f82); // tie: even is up
  assert.equal(fp32ToBf16(fromBits(0x3f807fff)), 0x3f80);
  assert.equal(fp32ToBf16(fromBits(0x3f808001)), 0x3f81);
  assert.equal(fp32ToBf16(3.4028234663852886e38), 0x7f80); // FLT_MAX rounds up to Inf
  assert.equal(fp32ToBf16(fromBits(0x7f7f7fff)), 0x7f7f);
  assert.equal(fp32ToBf16(0), 0x0000);
  assert.equal(fp32ToBf16(-0), 0x8000);
  assert.equal(fp32ToBf16(Infinity), 0x7f80);
  assert.equal(fp32ToBf16(-Infinity), 0xff80);
  const n = fp32ToBf16(NaN);
  assert.ok((n & 0x7f80) === 0x7f80 && (n & 0x7f) !== 0, 'NaN stays NaN');
  assert.equal(fp32ToBf16(fromBits(0x00000001)), 0x0000); // smallest float subnormal rounds to 0
  assert.equal(fp32ToBf16(fromBits(0x00018000)), 0x0002); // subnormal tie to even
});

test('bf16: every non-NaN bit pattern survives bf16 -> fp32 -> bf16', () => {
  for (let b = 0; b < 65536; b++) {
    const x = bf16ToFp32(b);
    if (Number.isNaN(x)) continue;
    assert.equal(bitsOf(x) >>> 16, b);
    assert.equal(fp32ToBf16(x), b);
  }
});
