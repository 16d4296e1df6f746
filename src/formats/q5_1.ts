// q5_1: ggml's block_q5_1, byte-identical to quantize_row_q5_1_ref / dequantize_row_q5_1.
import { defineFormat } from './format.js';
import { putF16, getF16 } from './bytes.js';
import { castUint8 } from './ggml-cast.js';
import { affineBound } from './ggml-bounds.js';

const QK = 32;
const fr = Math.fround;

export const q5_1 = defineFormat({
  id: 'q5_1',
  description: 'ggml Q5_1: 32 x 5-bit + f16 scale + f16 min',
  axis: 'token',
  blockValues: QK,
  blockBytes: 24,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = (max - min) / 31' },
    { name: 'm', bytes: 2, what: 'f16 min' },
    { name: 'qh', bytes: 4, what: 'uint32 LE: bit j = 5th bit of element j (j = 0..31)' },
    { name: 'qs', bytes: 16, what: 'byte j: low nibble = element j, high nibble = element j+16 (low 4 bits)' },
  ],
  rule: 'q = trunc((x - min)/d + 0.5) in float32 (no clamp: it cannot exceed 31); x = q * d + m',
  exact: false,
  ggmlType: 7,
  errorBound(src, srcOff) {
    let min = Infinity;
    let max = -Infinity;
    for (let j = 0; j < QK; j++) {
      const v = src[srcOff + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    return affineBound(fr(fr(max - min) / 31), min, 31, src, srcOff, QK);
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    let min = 3.4028234663852886e38; // FLT_MAX, as ggml starts
    let max = -3.4028234663852886e38;
    for (let j = 0; j < QK; j++) {
      const v = src[srcOff + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fr(fr(max - min) / 31);
    const id = d ? fr(1 / d) : 0;
    putF16(dst, dstOff, d);
    putF16(dst, dstOff + 2, min);
    let qh = 0;
    for (let j = 0; j < QK / 2; j++) {
      const x0 = fr(fr(src[srcOff + j]! - min) * id);
      const x1 = fr(fr(src[srcOff + QK / 2 + j]! - min) * id);
      const xi0 = castUint8(fr(x0 + 0.5));
      const xi1 = castUint8(fr(x1 + 0.5));
      dst[dstOff + 8 + j] = (xi0 & 0x0f) | ((xi1 & 0x0f) << 4);
      qh |= ((xi0 & 0x10) >>> 4) << j;
      qh |= ((xi1 & 0x10) >>> 4) << (j + QK / 2);
    }
    dst[dstOff + 4] = qh & 0xff;
    dst[dstOff + 5] = (qh >>> 8) & 0xff;
    dst[dstOff + 6] = (qh >>> 16) & 0xff;
    dst[dstOff + 7] = qh >>> 24;
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = getF16(src, srcOff);
    const m = getF16(src, srcOff + 2);
    const qh = src[srcOff + 4]! | (src[srcOff + 5]! << 8) | (src[srcOff + 6]! << 16) | (src[srcOff + 7]! << 24);
    for (let j = 0; j < QK / 2; j++) {
      const b = src[srcOff + 8 + j]!;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      dst[dstOff + j] = fr(fr(((b & 0x0f) | h0) * d) + m);
      dst[dstOff + j + QK / 2] = fr(fr(((b >> 4) | h1) * d) + m);
    }
  },
});
