// q8_0: ggml's block_q8_0, byte-identical to quantize_row_q8_0_ref / dequantize_row_q8_0.
import { defineFormat } from './format.js';
import { putF16, getF16 } from './bytes.js';
import { roundf } from '../numeric/round.js';
import { symmetricBound } from './ggml-bounds.js';

const QK = 32;
const fr = Math.fround;

/** d = amax / 127, as ggml computes it in float32. */
function scaleOf(src: Float32Array, srcOff: number): number {
  let amax = 0;
  for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(src[srcOff + j]!));
  return fr(amax / 127);
}

export const q8_0 = defineFormat({
  id: 'q8_0',
  description: 'ggml Q8_0: 32 int8 + f16 absmax scale',
  axis: 'token',
  blockValues: QK,
  blockBytes: 34,
  layout: [
    { name: 'd', bytes: 2, what: 'f16 scale = amax / 127' },
    { name: 'qs', bytes: 32, what: 'int8 q[j] for element j' },
  ],
  rule: 'q = roundf(x * (1/d)) in float32 (half away from zero); x = q * d',
  exact: false,
  ggmlType: 8,
  errorBound(src, srcOff) {
    return symmetricBound(scaleOf(src, srcOff), -127, 127, src, srcOff, QK);
  },
  encodeBlock(src, srcOff, dst, dstOff) {
    const d = scaleOf(src, srcOff);
    const id = d ? fr(1 / d) : 0;
    putF16(dst, dstOff, d);
    for (let j = 0; j < QK; j++) {
      // ggml stores roundf(x*id) in int8: the product is a float32 multiply.
      dst[dstOff + 2 + j] = roundf(fr(src[srcOff + j]! * id)) & 0xff;
    }
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    const d = getF16(src, srcOff);
    for (let j = 0; j < QK; j++) dst[dstOff + j] = fr(((src[srcOff + 2 + j]! << 24) >> 24) * d);
  },
});
