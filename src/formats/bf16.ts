// bf16: the top 16 bits of float32, rounded to nearest even as ggml's GGML_TYPE_BF16 does.
import { defineFormat } from './format.js';
import { fp32ToBf16, bf16ToFp32 } from '../numeric/half.js';

export const bf16 = defineFormat({
  id: 'bf16',
  description: 'bfloat16 (ggml BF16)',
  axis: 'token',
  blockValues: 1,
  blockBytes: 2,
  layout: [{ name: 'x', bytes: 2, what: 'bf16 bits (float32 >> 16), little-endian' }],
  rule: 'one value per 2 bytes, round to nearest even; NaN stays a quiet NaN',
  exact: true,
  ggmlType: 30,
  encodeBlock(src, srcOff, dst, dstOff) {
    const h = fp32ToBf16(src[srcOff]!);
    dst[dstOff] = h & 0xff;
    dst[dstOff + 1] = h >>> 8;
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    dst[dstOff] = bf16ToFp32(src[srcOff]! | (src[srcOff + 1]! << 8));
  },
});
