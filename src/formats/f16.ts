// f16: IEEE half precision, byte-identical to ggml's GGML_TYPE_F16 (round to nearest even).
import { defineFormat } from './format.js';
import { fp32ToFp16, FP16_TABLE } from '../numeric/half.js';

export const f16 = defineFormat({
  id: 'f16',
  description: 'IEEE float16 (ggml F16)',
  axis: 'token',
  blockValues: 1,
  blockBytes: 2,
  layout: [{ name: 'x', bytes: 2, what: 'fp16 bits, little-endian' }],
  rule: 'one value per 2 bytes, round to nearest even; |x| >= 65520 becomes +-Inf',
  exact: true,
  ggmlType: 1,
  encodeBlock(src, srcOff, dst, dstOff) {
    const h = fp32ToFp16(src[srcOff]!);
    dst[dstOff] = h & 0xff;
    dst[dstOff + 1] = h >>> 8;
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    dst[dstOff] = FP16_TABLE[src[srcOff]! | (src[srcOff + 1]! << 8)]!;
  },
});
