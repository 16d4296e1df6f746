// q5_0: ggml's block_q5_0, byte-identical to quantize_row_q5_0_ref / dequantize_row_q5_0.
import { defineFormat } from './format.js';
import { putF16, getF16 } from './bytes.js';
import { castInt8 } from './ggml-cast.js';
import { symmetricBound } from './ggml-bounds.js';

const QK = 32;
const fr = Math.fround;

/** d = (value of largest magnitude) / -16, as ggml computes it in float32. */
function scaleOf(src: Float32Array, srcOff: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < QK; j++) {
    const v = src[srcOff + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return fr(max / -16);
}

export const q5_0 = defineFormat({
  id: 'q5_0',
  description: 'ggml Q5_0: 32 x 5-bit + f16 scale (d = signed max / -16)',
  axis: 'token',
  blockValues: QK,
  blockBytes: 22,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = (value of largest magnitude) / -16' },
    { name: 'qh', bytes: 4, what: 'uint32 LE: bit j = 5th bit of element j (j = 0..31)' },
    { name: 'qs', bytes: 16, what: 'byte j: low nibble = element j, high nibble = element j+16 (low 4 bits)' },
  ],
  rule: 'q = min(31, trunc(x/d + 16.5)) in float32; x = (q - 16) * d',
  exact: false,
  ggmlType: 6,
  errorBound(src, srcOff) {
    return symmetricBound(scaleOf(src, srcOff), -16, 15, src, srcOff, QK);
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    const d = scaleOf(src, srcOff);
    const id = d ? fr(1 / d) : 0;
    putF16(dst, dstOff, d);
    let qh = 0;
    for (let j = 0; j < QK / 2; j++) {
      const x0 = fr(src[srcOff + j]! * id);
      const x1 = fr(src[srcOff + QK / 2 + j]! * id);
      const xi0 = Math.min(31, castInt8(fr(x0 + 16.5))) & 0xff;
      const xi1 = Math.min(31, castInt8(fr(x1 + 16.5))) & 0xff;
      dst[dstOff + 6 + j] = (xi0 & 0x0f) | ((xi1 & 0x0f) << 4);
      qh |= ((xi0 & 0x10) >>> 4) << j;
      qh |= ((xi1 & 0x10) >>> 4) << (j + QK / 2);
    }
    dst[dstOff + 2] = qh & 0xff;
    dst[dstOff + 3] = (qh >>> 8) & 0xff;
    dst[dstOff + 4] = (qh >>> 16) & 0xff;
    dst[dstOff + 5] = qh >>> 24;
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = getF16(src, srcOff);
    const qh = src[srcOff + 2]! | (src[srcOff + 3]! << 8) | (src[srcOff + 4]! << 16) | (src[srcOff + 5]! << 24);
    for (let j = 0; j < QK / 2; j++) {
      const b = src[srcOff + 6 + j]!;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      dst[dstOff + j] = fr((((b & 0x0f) | h0) - 16) * d);
      dst[dstOff + j + QK / 2] = fr((((b >> 4) | h1) - 16) * d);
    }
  },
});
