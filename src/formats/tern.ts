// tern: ternary {-s, 0, +s} codes, an f16 scale per group of g, 32 values per block, trits 5 per byte.
import { defineFormat, type KvFormat } from './format.js';
import { halfNearest, halfValue, putHalf } from './scale16.js';

const QK = 32;
const TRIT_BYTES = Math.ceil(QK / 5);
const fr = Math.fround;

/**
 * L2-optimal ternary scale for one group. For a fixed support S the best s is mean |x| over S, leaving
 * error sum x^2 - (sum_S |x|)^2 / |S|; the best S of size k is the k largest |x|, so the rule is: take
 * the k (smallest on ties) maximizing (sum of the k largest |x|)^2 / k, and s = their mean.
 */
export function ternScale(src: Float32Array, off: number, g: number): number {
  const a = Array.from({ length: g }, (_, j) => Math.abs(src[off + j]!)).sort((p, q) => q - p);
  let best = 0;
  let s = 0;
  let sum = 0;
  for (let k = 1; k <= g; k++) {
    sum += a[k - 1]!;
    if ((sum * sum) / k > best) {
      best = (sum * sum) / k;
      s = sum / k;
    }
  }
  return s;
}

function makeTern(g: 32 | 8 | 4): KvFormat {
  const sets = QK / g;
  return defineFormat({
    id: `tern_g${g}`,
    description: `ternary {-s,0,+s}: 32 values, f16 scale per ${g}, trits packed 5 per byte`,
    axis: 'token',
    blockValues: QK,
    blockBytes: 2 * sets + TRIT_BYTES,
    layout: [
      { name: 'd', bytes: 2 * sets, what: `${sets} f16 scale(s), group k = elements ${g}k..${g}k+${g - 1}` },
      {
        name: 'qt',
        bytes: TRIT_BYTES,
        what: 'trit t_j = code of element j; byte i = sum t_(5i+k) * 3^k, k = 0..4 (last byte: elements 30, 31)',
      },
    ],
    rule:
      's = f16 (nearest) of the L2-optimal ternary scale (ternScale); code 0 = -s, 1 = 0, 2 = +s: ' +
      '|x| > s/2 -> sign, else 0; x = fround((code - 1) * s). Bytes >= 243 decode digit by digit (excess ignored)',
    exact: false,
    encodeBlock(src, srcOff, dst, dstOff) {
      const trits = new Uint8Array(TRIT_BYTES * 5);
      for (let k = 0; k < sets; k++) {
        const s = putHalf(dst, dstOff + 2 * k, halfNearest(ternScale(src, srcOff + k * g, g)));
        for (let j = k * g; j < (k + 1) * g; j++) {
          const x = src[srcOff + j]!;
          trits[j] = Math.abs(x) > s / 2 ? (x < 0 ? 0 : 2) : 1;
        }
      }
      for (let i = 0; i < TRIT_BYTES; i++) {
        let byte = 0;
        for (let k = 4; k >= 0; k--) byte = byte * 3 + (5 * i + k < QK ? trits[5 * i + k]! : 0);
        dst[dstOff + 2 * sets + i] = byte;
      }
    },
    decodeBlock(src, srcOff, dst, dstOff) {
      for (let i = 0; i < TRIT_BYTES; i++) {
        let byte = src[srcOff + 2 * sets + i]!;
        for (let k = 0; k < 5 && 5 * i + k < QK; k++, byte = Math.floor(byte / 3)) {
          const j = 5 * i + k;
          const s = halfValue(src[srcOff + 2 * Math.floor(j / g)]! | (src[srcOff + 2 * Math.floor(j / g) + 1]! << 8));
          dst[dstOff + j] = fr(((byte % 3) - 1) * s);
        }
      }
    },
  });
}

export const tern_g32 = makeTern(32);
export const tern_g8 = makeTern(8);
export const tern_g4 = makeTern(4);
