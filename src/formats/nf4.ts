// nf4: QLoRA's 4-bit NormalFloat levels (bitsandbytes' NF4 table) x an f16 absmax scale, 64 values per group.
import { defineFormat } from './format.js';
import { halfUp, halfValue, putHalf } from './scale16.js';
import { codeAt } from './packbits.js';

const QK = 64;
const fr = Math.fround;

/**
 * The 16 NF4 levels in code order, as float32. QLoRA builds them from N(0,1) quantiles: 8 for the positive
 * half, 7 for the negative, plus an exact 0, normalized to [-1, 1] (`nf4.test.ts` re-derives them).
 */
export const NF4_LEVELS: readonly number[] = Object.freeze(
  [
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
  ].map(fr),
);
// Decision points between adjacent levels (nearest level; a tie goes to the lower code).
const MID = NF4_LEVELS.slice(1).map((v, i) => (v + NF4_LEVELS[i]!) / 2);
const HALF_GAP = Math.max(...MID.map((m, i) => m - NF4_LEVELS[i]!));

function absmax(src: Float32Array, off: number): number {
  let amax = 0;
  for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(src[off + j]!));
  return amax;
}

export const nf4 = defineFormat({
  id: 'nf4',
  description: 'QLoRA NF4: 64 x 4-bit normal-float levels + f16 absmax scale',
  axis: 'token',
  blockValues: QK,
  blockBytes: 34,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = block absmax, rounded up so |x/d| <= 1' },
    { name: 'qs', bytes: 32, what: 'byte i: low nibble = code of element 2i, high nibble = element 2i+1' },
  ],
  rule: 'code = index of the NF4 level nearest x/d (float64; ties to the lower code); x = fround(level * d)',
  exact: false,
  errorBound(src, srcOff) {
    const amax = absmax(src, srcOff);
    const d = halfValue(halfUp(amax));
    // Half the widest gap between levels, plus any overshoot when the scale saturated at 65504.
    return HALF_GAP * d + Math.max(0, amax - d) + 2 ** -22 * amax;
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    const d = putHalf(dst, dstOff, halfUp(absmax(src, srcOff)));
    // d = 0 only for an all-zero block: every value then takes the 0 level (code 7).
    const v = (j: number) => (d ? src[srcOff + j]! / d : 0);
    for (let i = 0; i < QK / 2; i++) dst[dstOff + 2 + i] = nearest(v(2 * i)) | (nearest(v(2 * i + 1)) << 4);
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = halfValue(src[srcOff]! | (src[srcOff + 1]! << 8));
    for (let j = 0; j < QK; j++) dst[dstOff + j] = fr(NF4_LEVELS[codeAt(src, srcOff + 2, j, 4)]! * d);
  },
});

/** Index of the level nearest v: the number of decision points strictly below v. */
function nearest(v: number): number {
  let q = 0;
  while (q < 15 && v > MID[q]!) q++;
  return q;
}
