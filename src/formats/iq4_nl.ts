// iq4_nl: ggml's block_iq4_nl (4-bit indices into a fixed non-linear codebook, one f16 scale),
// byte-identical to quantize_row_iq4_nl_ref / dequantize_row_iq4_nl.
import { defineFormat } from './format.js';
import { putF16, getF16 } from './bytes.js';
import { roundFp16 } from '../numeric/half.js';

const QK = 32;
const fr = Math.fround;

/** ggml's kvalues_iq4nl: the 16 levels, in units of the block scale. */
export const IQ4NL_LEVELS: readonly number[] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/** ggml's GROUP_MAX_EPS: blocks whose largest magnitude is below it are stored as all zeros. */
const GROUP_MAX_EPS = fr(1e-15);

/** Nearest level index; an exact midpoint goes to the upper level (ggml's best_index_int8). */
function nearestLevel(x: number): number {
  // 2x against the sum of neighbours is exact, so midpoints are decided exactly.
  const x2 = x + x;
  let l = 0;
  while (l < 15 && x2 >= IQ4NL_LEVELS[l]! + IQ4NL_LEVELS[l + 1]!) l++;
  return l;
}

/** The value of largest magnitude (first one on ties), as ggml's loop finds it. */
function signedMax(src: Float32Array, srcOff: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < QK; j++) {
    const ax = Math.abs(src[srcOff + j]!);
    if (ax > amax) {
      amax = ax;
      max = src[srcOff + j]!;
    }
  }
  return max;
}

export const iq4_nl = defineFormat({
  id: 'iq4_nl',
  description: 'ggml IQ4_NL: 32 x 4-bit codebook indices + f16 least-squares scale',
  axis: 'token',
  blockValues: QK,
  blockBytes: 18,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale (weighted least squares for the chosen levels)' },
    { name: 'qs', bytes: 16, what: 'byte j: low nibble = index of element j, high nibble = index of element j+16' },
  ],
  rule:
    'd0 = max/-127; index = nearest level to x/d0 (midpoint -> upper); d = sum(w*q*x)/sum(w*q*q), w = x*x, ' +
    'all in float32 (no scale search: the _ref passes ntry = -1); x = d * level[index]',
  exact: false,
  ggmlType: 20,
  errorBound(src, srcOff) {
    // No a-priori per-value bound: the least-squares scale can move the block's largest value by several
    // steps. The promise is the exact-arithmetic outcome of the definition above, plus one fp16 ulp of the
    // scale (float32 sums can flip its rounding) and float slack.
    const max = signedMax(src, srcOff);
    const amax = Math.abs(max);
    if (amax < GROUP_MAX_EPS) return amax;
    const d0 = max / -127;
    const q = new Float64Array(QK);
    let sumqx = 0;
    let sumq2 = 0;
    for (let j = 0; j < QK; j++) {
      const x = src[srcOff + j]!;
      q[j] = IQ4NL_LEVELS[nearestLevel(x / d0)]!;
      sumqx += x * x * q[j]! * x;
      sumq2 += x * x * q[j]! * q[j]!;
    }
    const dh = roundFp16(sumqx / sumq2);
    if (!Number.isFinite(dh)) return Infinity;
    let worst = 0;
    for (let j = 0; j < QK; j++) worst = Math.max(worst, Math.abs(dh * q[j]! - src[srcOff + j]!));
    return worst + 127 * Math.abs(dh) * 2 ** -10 + amax * 2 ** -12;
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    const max = signedMax(src, srcOff);
    dst.fill(0, dstOff, dstOff + 18);
    if (Math.abs(max) < GROUP_MAX_EPS) return; // d = 0, every index 0
    const d0 = fr(max / -127);
    const id = fr(1 / d0);
    let sumqx = 0;
    let sumq2 = 0;
    for (let j = 0; j < QK; j++) {
      const x = src[srcOff + j]!;
      const l = nearestLevel(fr(id * x));
      const q = IQ4NL_LEVELS[l]!;
      const wq = fr(fr(x * x) * q);
      sumqx = fr(sumqx + fr(wq * x));
      sumq2 = fr(sumq2 + fr(wq * q));
      // byte j holds element j (low nibble) and element j+16 (high nibble)
      dst[dstOff + 2 + (j & 15)] |= j < 16 ? l : l << 4;
    }
    putF16(dst, dstOff, sumq2 > 0 ? fr(sumqx / sumq2) : 0);
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = getF16(src, srcOff);
    for (let j = 0; j < QK / 2; j++) {
      const b = src[srcOff + 2 + j]!;
      dst[dstOff + j] = fr(d * IQ4NL_LEVELS[b & 0x0f]!);
      dst[dstOff + j + QK / 2] = fr(d * IQ4NL_LEVELS[b >> 4]!);
    }
  },
});
