// sign: one bit per value {-s, +s}, an f16 scale per group of g, 32 values per block.
import { defineFormat, type KvFormat } from './format.js';
import { halfNearest, halfValue, putHalf } from './scale16.js';
import { packCodes, codeAt } from './packbits.js';

const QK = 32;
const fr = Math.fround;

function makeSign(g: 32 | 8 | 4): KvFormat {
  const sets = QK / g;
  return defineFormat({
    id: `sign_g${g}`,
    description: `sign {-s,+s}: 32 values, f16 scale = mean |x| per ${g}`,
    axis: 'token',
    blockValues: QK,
    blockBytes: 2 * sets + QK / 8,
    layout: [
      { name: 'd', bytes: 2 * sets, what: `${sets} f16 scale(s) = mean |x| of elements ${g}k..${g}k+${g - 1}` },
      { name: 'qs', bytes: QK / 8, what: 'bit j&7 of byte j>>3 = 1 when element j is negative' },
    ],
    // For fixed signs, sum (|x| - s)^2 is smallest at s = mean |x|: the L2-optimal scale.
    rule: 's = f16 (nearest) of mean |x| over the group; bit = x < 0; x = fround(bit ? -s : s)',
    exact: false,
    encodeBlock(src, srcOff, dst, dstOff) {
      const bits = new Uint8Array(QK);
      for (let k = 0; k < sets; k++) {
        let sum = 0;
        for (let j = k * g; j < (k + 1) * g; j++) sum += Math.abs(src[srcOff + j]!);
        putHalf(dst, dstOff + 2 * k, halfNearest(sum / g));
      }
      for (let j = 0; j < QK; j++) bits[j] = src[srcOff + j]! < 0 ? 1 : 0;
      packCodes(bits, QK, 1, dst, dstOff + 2 * sets);
    },
    decodeBlock(src, srcOff, dst, dstOff) {
      for (let j = 0; j < QK; j++) {
        const k = Math.floor(j / g);
        const s = halfValue(src[srcOff + 2 * k]! | (src[srcOff + 2 * k + 1]! << 8));
        dst[dstOff + j] = fr(codeAt(src, srcOff + 2 * sets, j, 1) ? -s : s);
      }
    },
  });
}

export const sign_g32 = makeSign(32);
export const sign_g8 = makeSign(8);
export const sign_g4 = makeSign(4);
