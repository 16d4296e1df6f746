// q4_1: ggml's block_q4_1, byte-identical to quantize_row_q4_1_ref / dequantize_row_q4_1.
import { defineFormat } from './format.js';
import { putF16, getF16 } from './bytes.js';
import { castInt8 } from './ggml-cast.js';
import { affineBound } from './ggml-bounds.js';

const QK = 32;
const fr = Math.fround;

export const q4_1 = defineFormat({
  id: 'q4_1',
  description: 'ggml Q4_1: 32 x 4-bit + f16 scale + f16 min',
  axis: 'token',
  blockValues: QK,
  blockBytes: 20,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = (max - min) / 15' },
    { name: 'm', bytes: 2, what: 'f16 min' },
    { name: 'qs', bytes: 16, what: 'byte j: low nibble = element j, high nibble = element j+16' },
  ],
  rule: 'q = min(15, trunc((x - min)/d + 0.5)) in float32 (1/d from the unrounded d); x = q * d + m',
  exact: false,
  ggmlType: 3,
  errorBound(src, srcOff) {
    let min = Infinity;
    let max = -Infinity;
    for (let j = 0; j < QK; j++) {
      const v = src[srcOff + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    return affineBound(fr(fr(max - min) / 15), min, 15, src, srcOff, QK);
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    let min = 3.4028234663852886e38; // FLT_MAX, as ggml starts
    let max = -3.4028234663852886e38;
    for (let j = 0; j < QK; j++) {
      const v = src[srcOff + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fr(fr(max - min) / 15);
    const id = d ? fr(1 / d) : 0;
    putF16(dst, dstOff, d);
    putF16(dst, dstOff + 2, min);
    for (let j = 0; j < QK / 2; j++) {
      const x0 = fr(fr(src[srcOff + j]! - min) * id);
      const x1 = fr(fr(src[srcOff + QK / 2 + j]! - min) * id);
      const xi0 = Math.min(15, castInt8(fr(x0 + 0.5))) & 0xff;
      const xi1 = Math.min(15, castInt8(fr(x1 + 0.5))) & 0xff;
      dst[dstOff + 4 + j] = (xi0 | (xi1 << 4)) & 0xff;
    }
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = getF16(src, srcOff);
    const m = getF16(src, srcOff + 2);
    for (let j = 0; j < QK / 2; j++) {
      const b = src[srcOff + 4 + j]!;
      dst[dstOff + j] = fr(fr((b & 0x0f) * d) + m);
      dst[dstOff + j + QK / 2] = fr(fr((b >> 4) * d) + m);
    }
  },
});
