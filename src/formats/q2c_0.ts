// q2c_0: seed 000's per-channel 2-bit K block (32 tokens of one channel, Lloyd-Max codebook over block RMS).
// Not ggml's Q2_K: the name only says "2-bit, per-channel, version 0".
import { defineFormat } from './format.js';
import { halfNearest, halfValue, putHalf } from './scale16.js';
import { packCodes, codeAt } from './packbits.js';
import { LLOYD_MAX_4 } from '../numeric/lloydmax.js';

const QK = 32;
const fr = Math.fround;
// Codebook in code order 0..3 and the thresholds between codes, as float32 (what a kernel holds).
const LEVEL = LLOYD_MAX_4.levels.map(fr);
const T_HI = fr(LLOYD_MAX_4.thresholds[2]);
// Largest |x - level| for |x| <= LEVEL[3]*d, in units of d: the widest half-cell of the codebook.
const HALF_CELL = Math.max(T_HI - LEVEL[2]!, LEVEL[3]! - T_HI, LEVEL[2]!);

/** Stored scale bits: f16(rms) rounded to nearest, saturated at 65504. */
function scaleBits(src: Float32Array, off: number): number {
  let ss = 0;
  for (let j = 0; j < QK; j++) ss += src[off + j]! * src[off + j]!;
  return halfNearest(Math.sqrt(ss / QK));
}

export const q2c_0 = defineFormat({
  id: 'q2c_0',
  description: 'seed 000 per-channel 2-bit K: 32 tokens of one channel, Lloyd-Max levels x f16 RMS',
  axis: 'channel',
  blockValues: QK,
  blockBytes: 10,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = block RMS sqrt(mean x^2), rounded to nearest' },
    { name: 'qs', bytes: 8, what: '2-bit code of token j in byte j>>2 at bits 2*(j&3)' },
  ],
  rule:
    'code 0..3 = -1.5104, -0.4528, +0.4528, +1.5104 (times d); with t = float32(fround(0.9816) * d): ' +
    'x < -t -> 0, -t <= x < 0 -> 1, 0 <= x < t -> 2, x >= t -> 3; x = fround(level[code]) * d in float32',
  exact: false,
  errorBound(src, srcOff) {
    const d = halfValue(scaleBits(src, srcOff));
    let amax = 0;
    for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(src[srcOff + j]!));
    // Inside the codebook's range the error is at most the widest half-cell; beyond it, the overshoot.
    const bound = Math.max(HALF_CELL * d, amax - LEVEL[3]! * d);
    return bound + 2 ** -22 * Math.max(amax, LEVEL[3]! * d);
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    const d = putHalf(dst, dstOff, scaleBits(src, srcOff));
    const t = fr(T_HI * d);
    const codes = new Uint8Array(QK);
    for (let j = 0; j < QK; j++) {
      const x = src[srcOff + j]!;
      codes[j] = x < 0 ? (x < -t ? 0 : 1) : x < t ? 2 : 3;
    }
    packCodes(codes, QK, 2, dst, dstOff + 2);
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = halfValue(src[srcOff]! | (src[srcOff + 1]! << 8));
    for (let j = 0; j < QK; j++) dst[dstOff + j] = fr(LEVEL[codeAt(src, srcOff + 2, j, 2)]! * d);
  },
});
