// `kvpack info`: what this process runs on: the runtime, the wasm kernels and which build of them (relaxed or
// baseline SIMD, and why), and the cores the matmul pool may use.
import type { Command } from 'commander';
import { kernelBuild, wasmFailure } from '../kernels/runtime/wasm.js';
import { availableCores } from '../kernels/runtime/threads.js';

export function register(program: Command): void {
  program
    .command('info')
    .description('runtime, wasm kernel build (relaxed or baseline SIMD) and cores')
    .option('--json', 'machine-readable output')
    .action((opts: { json?: boolean }) => {
      const failed = wasmFailure();
      const build = kernelBuild();
      const info = {
        runtime: `Node ${process.versions.node} (V8 ${process.versions.v8})`,
        wasmKernels: failed ? `unavailable: ${failed}` : 'loaded',
        kernelBuild: build?.note ?? null,
        relaxedSimd: build?.relaxed ?? false,
        cores: availableCores(),
      };
      if (opts.json) return void console.log(JSON.stringify(info, null, 2));
      console.log(`runtime:      ${info.runtime}`);
      console.log(`wasm kernels: ${info.wasmKernels}`);
      if (build) console.log(`kernel build: ${build.note}`);
      console.log(`cores:        ${info.cores}`);
    });
}
