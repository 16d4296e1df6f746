// Asymmetric min-max integer formats (KIVI-style): f16 scale + f16 min per group, then b-bit codes.
// Token axis (int4_g32 ...): a group runs along the head dim; channel axis (int4c_g32): 32 tokens of one
// channel, KIVI's per-channel K.
import { defineFormat, type Axis, type KvFormat } from './format.js';
import { halfDown, halfUp, halfValue, putHalf } from './scale16.js';
import { packCodes, codeAt } from './packbits.js';

const fr = Math.fround;

/**
 * Stored (scale, min) bits for a group. The min is rounded down and the scale up to f16, so the grid
 * min + [0, 2^b - 1] * scale covers [min, max] and every value is within half a step (unless saturated).
 */
function params(src: Float32Array, off: number, n: number, top: number): { mBits: number; sBits: number } {
  let lo = Infinity;
  let hi = -Infinity;
  for (let j = 0; j < n; j++) {
    lo = Math.min(lo, src[off + j]!);
    hi = Math.max(hi, src[off + j]!);
  }
  const mBits = halfDown(lo);
  return { mBits, sBits: halfUp((hi - halfValue(mBits)) / top) };
}

function makeAffine(bits: 2 | 4, group: number, axis: Axis): KvFormat {
  const top = (1 << bits) - 1;
  const codeBytes = (group * bits) / 8;
  const id = `int${bits}${axis === 'channel' ? 'c' : ''}_g${group}`;
  const along = axis === 'channel' ? `${group} tokens of one channel` : `${group} values along the head dim`;
  return defineFormat({
    id,
    description: `affine ${bits}-bit min-max, ${along}, f16 scale + f16 min`,
    axis,
    blockValues: group,
    blockBytes: 4 + codeBytes,
    layout: [
      { name: 'd', bytes: 2, what: `f16 scale = (max - min) / ${top}, rounded up` },
      { name: 'm', bytes: 2, what: 'f16 min, rounded down' },
      { name: 'qs', bytes: codeBytes, what: `${bits}-bit code of element j in byte (j*${bits})>>3 at bit (j*${bits})&7` },
    ],
    rule: `code = min(${top}, floor((x - m) / d + 0.5)) (0 when d = 0); x = fround(m + code * d)`,
    exact: false,
    errorBound(src, srcOff) {
      const { mBits, sBits } = params(src, srcOff, group, top);
      const m = halfValue(mBits);
      const d = halfValue(sBits);
      let lo = Infinity;
      let hi = -Infinity;
      for (let j = 0; j < group; j++) {
        lo = Math.min(lo, src[srcOff + j]!);
        hi = Math.max(hi, src[srcOff + j]!);
      }
      // Half a step, plus how far the values stick out of the grid when a half saturated at +-65504.
      const out = Math.max(0, m - lo, hi - (m + top * d));
      return d / 2 + out + 2 ** -22 * Math.max(Math.abs(lo), Math.abs(hi));
    },
    encodeBlock(src, srcOff, dst, dstOff) {
      const { mBits, sBits } = params(src, srcOff, group, top);
      const d = putHalf(dst, dstOff, sBits);
      const m = putHalf(dst, dstOff + 2, mBits);
      const codes = new Uint8Array(group);
      for (let j = 0; j < group; j++) {
        const q = d ? Math.floor((src[srcOff + j]! - m) / d + 0.5) : 0;
        codes[j] = Math.max(0, Math.min(top, q));
      }
      packCodes(codes, group, bits, dst, dstOff + 4);
    },
    decodeBlock(src, srcOff, dst, dstOff) {
      const d = halfValue(src[srcOff]! | (src[srcOff + 1]! << 8));
      const m = halfValue(src[srcOff + 2]! | (src[srcOff + 3]! << 8));
      for (let j = 0; j < group; j++) dst[dstOff + j] = fr(m + codeAt(src, srcOff + 4, j, bits) * d);
    },
  });
}

export const int4_g32 = makeAffine(4, 32, 'token');
export const int4_g64 = makeAffine(4, 64, 'token');
export const int4_g128 = makeAffine(4, 128, 'token');
export const int2_g32 = makeAffine(2, 32, 'token');
export const int2_g64 = makeAffine(2, 64, 'token');
export const int2_g128 = makeAffine(2, 128, 'token');
export const int4c_g32 = makeAffine(4, 32, 'channel');
export const int2c_g32 = makeAffine(2, 32, 'channel');

/** Every affine instance, in registry order. */
export const affineFormats: readonly KvFormat[] = [int4_g32, int4_g64, int4_g128, int2_g32, int2_g64, int2_g128, int4c_g32, int2c_g32];
