// f32: plain IEEE float32, little-endian. Lossless; used for exact regions and as the baseline.
import { defineFormat } from './format.js';

export const f32 = defineFormat({
  id: 'f32',
  description: 'IEEE float32 (exact)',
  axis: 'token',
  blockValues: 1,
  blockBytes: 4,
  layout: [{ name: 'x', bytes: 4, what: 'float32 little-endian' }],
  rule: 'one value per 4 bytes, little-endian, no rounding',
  exact: true,
  ggmlType: 0,
  encodeBlock(src, srcOff, dst, dstOff) {
    new DataView(dst.buffer, dst.byteOffset).setFloat32(dstOff, src[srcOff]!, true);
  },
  decodeBlock(src, srcOff, dst, dstOff) {
    dst[dstOff] = new DataView(src.buffer, src.byteOffset).getFloat32(srcOff, true);
  },
});
