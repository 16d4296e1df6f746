// kvpack's public API.
export * from './exports-common.js';
export { readStored } from './kernels/attention/dequantize.js';
export { attendNaive } from './kernels/attention/naive.js';
export type { AttendReport } from './kernels/attention/attend.js';
export { unregisterKernel, type Precision as KernelPrecision } from './kernels/attention/registry.js';
export { KERNEL_TABLE, type KernelRow } from './kernels/attention/table.js';
export { setSpaceCap, spaceCap, spaces, usedBytes as spaceBytesUsed } from './kernels/runtime/spaces.js';
export { Rotation } from './numeric/hadamard.js';
export { readGguf } from './gguf/reader.js';
export { writeGguf, encodeGguf, type GgufWriteInput, type GgufTensorInput } from './gguf/writer.js';
export { gv, type GgufValue, type GgufArray, type GgufItemType } from './gguf/values.js';
export { GGML, ggmlTypes, ggmlType, ggmlTypeByName, type GgmlType } from './gguf/types.js';
export { dequantize, dequantizeTensor, canDequantize } from './kernels/matmul/dequant.js';
export { loadGgufModel, readHparams } from './gguf/model.js';
export { loadLlama2c } from './gguf/llama2c-file.js';
export { convertLlama2c } from './gguf/convert.js';
export { isHfDir } from './hf/load.js';
export { dirFiles } from './hf/dir-files.js';
export { convertHfDir } from './hf/convert.js';
export { readSafetensors } from './hf/safetensors.js';
export {
  relL2,
  relRms,
  nmse,
  maxAbs,
  massInWindow,
  klMean,
  top1Agree,
  sameTopP,
  nllMean,
  nllDelta,
  matchedPrefix,
  exactMatch,
  type LogitRows,
  type ExactMatch,
} from './lab/metrics.js';
export { synthesize, type SyntheticSpec, type SyntheticKv, type Focus } from './lab/synthetic.js';
export { readCapture, writeCapture, type Capture, type CapturedLayer } from './lab/capture.js';
export { protocols, getProtocol, runProtocol } from './lab/protocol.js';
export { auditRun } from './lab/audit.js';
export { runLab, type LabOptions } from './lab/lab.js';
export { loadModel, type ModelSource } from './model/model.js';
export { teacherForcedLogits } from './model/generate.js';
export { architectures, getArchitecture, type ArchSpec } from './model/arch/registry.js';
export type { Hparams, RopeScaling, RopeStyle } from './model/hparams.js';
export type { ForwardOptions } from './model/forward.js';
export { captureModel } from './lab/capture-model.js';
export { runProbe, protectLayers, type ProbeOptions, type ProbeResult } from './lab/probe.js';
export { runArm, scoreArm, evalTable, type EvalArm, type ArmScore } from './lab/eval.js';
export {
  computeReference,
  loadOrComputeReference,
  readReference,
  writeReference,
  REFERENCE_POLICY,
  type ReferenceSet,
  type EvalPrompt,
} from './lab/reference-logits.js';
export { defaultPrompts, readPromptsFile } from './lab/prompts.js';
export type { EncodeOptions } from './model/tokenizer/index.js';
export { renderChat, ChatTemplateError, type ChatMessage } from './model/chat.js';
export { RedisChunkStore, type ChunkStore, type RedisStoreOptions } from './store/redis-store.js';
export { parseStoreUrl, type StoreTarget, type StoreNode } from './store/url.js';
export { exportChunk, importChunks } from './store/cache-chunks.js';
export { encodeChunk, decodeChunk, type ChunkLayers } from './store/chunk-codec.js';
export { StoreCounters, registerStoreMetrics, type CounterValues, type StoreMetricsOptions } from './store/counters.js';
export { STORE_FORMAT_VERSION, storeKey } from './store/value.js';
export { RemotePrefixTier, type PrefixTierOptions } from './store/prefix-tier.js';
export { MemoryChunkStore } from './store/memory-store.js';
