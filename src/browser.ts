// kvpack's browser entry (package.json exports, condition "browser"; bundled by scripts/build-browser.mjs
// into dist/browser/kvpack.js): formats, kernels, cache, GGUF reader, tokenizer, model and generate, with
// byte sources for a page instead of paths. Model loading and generation block, so run them in a Worker;
// threads need a cross-origin isolated page and `await startThreads(n)` first.
import { startPool, setThreads as setAttendThreads } from './kernels/runtime/pool.js';
import { wasmKernels } from './kernels/runtime/wasm.js';
import { configureMatmul } from './kernels/matmul/config.js';

export * from './exports-common.js';
export { getThreads, poolFailure, poolStats, coreCount } from './kernels/runtime/pool.js';
export { readGgufFrom } from './gguf/reader.js';
export { memorySource, type ByteSource } from './gguf/source.js';
export { arrayBufferSource, blobSource, urlSource, READ_STEP } from './gguf/web-sources.js';
export { loadModelFrom } from './model/model.js';
export { blobFiles, urlFiles, type PickedFile, type ServedFile } from './hf/web-files.js';
export { configureMatmul } from './kernels/matmul/config.js';

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
