// kvpack's browser entry (package.json exports, condition "browser"; bundled by scripts/build-browser.mjs
// into dist/browser/kvpack.js): formats, kernels, cache, GGUF reader, tokenizer, model and generate, with
// byte sources for a page instead of paths. Model loading and generation block, so run them in a Worker;
// threads need a cross-origin isolated page and `await startThreads(n)` first.
import { startPool, setThreads as setAttendThreads } from './kernels/pool.js';
import { wasmKernels } from './kernels/wasm.js';
import { configureMatmul } from './model/matmul-wasm.js';

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
export { attend } from './kernels/attend.js';
export { lookupKernel, registerKernel, hasKernel, registeredKernels, type Op as KernelOp, type Impl as KernelImpl } from './kernels/registry.js';
export { wasmKernels, wasmFailure } from './kernels/wasm.js';
export { getThreads, poolFailure, poolStats, coreCount } from './kernels/pool.js';
export { readGgufFrom, parseGguf, type GgufFile, type GgufTensorInfo } from './gguf/reader.js';
export { memorySource, type ByteSource } from './gguf/source.js';
export { arrayBufferSource, blobSource, urlSource, READ_STEP } from './gguf/web-sources.js';
export { modelFromGguf, type LoadedModel, type ModelHparams, type ModelTensor } from './gguf/model.js';
export { loadModelFrom, loadHfModelFrom, modelFromLoaded, Model, type LoadOptions, type CacheOptions } from './model/model.js';
export { loadHfModel } from './hf/load.js';
export { memoryFiles, isHfModelFile, type ModelFiles } from './hf/model-files.js';
export { blobFiles, urlFiles, type PickedFile, type ServedFile } from './hf/web-files.js';
export { readSafetensorsFrom, type SafetensorsFile, type SafetensorsTensor } from './hf/safetensors.js';
export { generate, prefill, PREFILL_CHUNK, type GenerateOptions, type GenerateResult } from './model/generate.js';
export { Sampler, argmax, type SamplerOptions } from './model/sampler.js';
export { configureMatmul } from './model/matmul-wasm.js';
export { createTokenizer, Tokenizer, StreamDecoder, type TokenizerMetadata } from './model/tokenizer/index.js';

/**
 * Sets the thread budget of matmuls and attention to `n` (this thread included) and starts the n - 1
 * Web Workers over the shared arena; resolves to the threads that will run (1 when the page is not
 * cross-origin isolated or the kernels are missing: poolFailure() says why).
 */
export async function startThreads(n: number): Promise<number> {
  const k = wasmKernels();
  const ok = n > 1 && k !== null && (await startPool(k, n - 1));
  const threads = ok ? n : 1;
  configureMatmul({ threads });
  setAttendThreads(threads);
  return threads;
}
