// q4_0: ggml's block_q4_0, byte-identical to quantize_row_q4_0_ref / dequantize_row_q4_0.
import { defineFormat } from './format.js';
import { putF16, getF16 } from './bytes.js';
import { castInt8 } from './ggml-cast.js';
import { symmetricBound } from './ggml-bounds.js';

const QK = 32;
const fr = Math.fround;

/** d = (value of largest magnitude) / -8, as ggml computes it in float32. */
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
  return fr(max / -8);
}

export const q4_0 = defineFormat({
  id: 'q4_0',
  description: 'ggml Q4_0: 32 x 4-bit + f16 scale (d = signed max / -8)',
  axis: 'token',
  blockValues: QK,
  blockBytes: 18,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = (value of largest magnitude) / -8' },
    { name: 'qs', bytes: 16, what: 'byte j: low nibble = element j, high nibble = element j+16' },
  ],
  rule: 'q = min(15, trunc(x/d + 8.5)) in float32; x = (q - 8) * d',
  exact: false,
  ggmlType: 2,
  errorBound(src, srcOff) {
    // q = 8 is clamped to 7: a full-magnitude value opposite in sign to the max is off by up to one step.
    return symmetricBound(scaleOf(src, srcOff), -8, 7, src, srcOff, QK);
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    const d = scaleOf(src, srcOff);
    const id = d ? fr(1 / d) : 0;
    putF16(dst, dstOff, d);
    for (let j = 0; j < QK / 2; j++) {
      const x0 = fr(src[srcOff + j]! * id);
      const x1 = fr(src[srcOff + QK / 2 + j]! * id);
      // (int8_t) casts as ggml's build does them: +-Inf (1/d overflowed for a tiny block) gives 0, not 15.
      const xi0 = Math.min(15, castInt8(fr(x0 + 8.5))) & 0xff;
      const xi1 = Math.min(15, castInt8(fr(x1 + 8.5))) & 0xff;
      dst[dstOff + 2 + j] = (xi0 | (xi1 << 4)) & 0xff;
    }
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = getF16(src, srcOff);
    for (let j = 0; j < QK / 2; j++) {
      const b = src[srcOff + 2 + j]!;
      dst[dstOff + j] = fr(((b & 0x0f) - 8) * d);
      dst[dstOff + j + QK / 2] = fr(((b >> 4) - 8) * d);
    }
  },
});
