// kvpack's public API.
export * from './errors.js';
export { formats, getFormat } from './formats/registry.js';
export { bitsPerValue, bytesFor, rowBytes, blocksFor, type KvFormat, type Axis, type LayoutField } from './formats/format.js';
export { encode, decode, type Shape } from './formats/codec.js';
export { attendReference, type AttendArgs } from './attention/reference.js';
export { checkView, type MixedView, type Segment, type PackedRun } from './attention/view.js';
export { fp32ToFp16, fp16ToFp32, fp32ToBf16, bf16ToFp32 } from './numeric/half.js';
