// kvpack's public API.
export * from './errors.js';
export { formats, getFormat } from './formats/registry.js';
export { bitsPerValue, bytesFor, rowBytes, blocksFor, type KvFormat, type Axis, type LayoutField } from './formats/format.js';
export { encode, decode, type Shape } from './formats/codec.js';
export { attendReference, type AttendArgs } from './attention/reference.js';
export { checkView, type MixedView, type Segment, type PackedRun } from './attention/view.js';
export { fp32ToFp16, fp16ToFp32, fp32ToBf16, bf16ToFp32 } from './numeric/half.js';
export { KvCache, type KvCacheOptions, type AttendOptions, type CacheBytes } from './cache/kvcache.js';
export { planLayers, type CachePolicy, type LayerOverride, type AnchorPolicy, type RotationPolicy, type WindowMode, type LayerPlan } from './cache/policy.js';
export { schemes, schemePolicy, type Scheme } from './cache/schemes.js';
export { kvBytes, type KvBytes, type KvBytesConfig, type RegionBytes } from './cache/accounting.js';
export { readStored } from './attention/dequantize.js';
export { attendNaive } from './attention/naive.js';
export { attend } from './kernels/attend.js';
export { Rotation } from './numeric/hadamard.js';
