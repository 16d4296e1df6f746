// The exports kvpack's Node entry (index.ts) and browser entry (browser.ts) share, written once: each entry
// re-exports this and adds what only it offers (paths and Node files there, blobs, URLs and threads here).
// Everything reached from here is bundled for the browser, so a module that needs a Node built-in goes in
// index.ts instead (scripts/build-browser.mjs fails the build on one).
export * from './errors.js';
export { formats, getFormat } from './formats/registry.js';
export { bitsPerValue, bytesFor, rowBytes, blocksFor, type KvFormat, type Axis, type LayoutField } from './formats/format.js';
export { encode, decode, type Shape } from './formats/codec.js';
export { attendReference, type AttendArgs } from './kernels/attention/reference.js';
export { checkView, type MixedView, type Segment, type PackedRun } from './kernels/attention/view.js';
export { fp32ToFp16, fp16ToFp32, fp32ToBf16, bf16ToFp32 } from './numeric/half.js';
export { KvCache, type KvCacheOptions, type AttendOptions, type CacheBytes } from './cache/kvcache.js';
export { planLayers, type CachePolicy, type LayerOverride, type AnchorPolicy, type RotationPolicy, type WindowMode, type LayerPlan } from './cache/policy.js';
export { schemes, schemePolicy, type Scheme } from './cache/schemes.js';
export { kvBytes, type KvBytes, type KvBytesConfig, type RegionBytes } from './cache/accounting.js';
export { attend } from './kernels/attention/attend.js';
export { lookupKernel, registerKernel, hasKernel, registeredKernels, type Op as KernelOp, type Impl as KernelImpl } from './kernels/attention/registry.js';
export { wasmKernels, wasmFailure } from './kernels/runtime/wasm.js';
export { parseGguf, type GgufFile, type GgufTensorInfo } from './gguf/reader.js';
export { modelFromGguf, type LoadedModel, type ModelHparams, type ModelTensor } from './gguf/model.js';
export { loadHfModel } from './hf/load.js';
export { memoryFiles, isHfModelFile, type ModelFiles } from './hf/model-files.js';
export { readSafetensorsFrom, type SafetensorsFile, type SafetensorsTensor } from './hf/safetensors.js';
export { loadHfModelFrom, modelFromLoaded, Model, type LoadOptions, type CacheOptions } from './model/model.js';
export { generate, prefill, PREFILL_CHUNK, type GenerateOptions, type GenerateResult } from './model/generate.js';
export { Sampler, argmax, type SamplerOptions } from './model/sampler.js';
export { createTokenizer, Tokenizer, StreamDecoder, type TokenizerMetadata } from './model/tokenizer/index.js';
