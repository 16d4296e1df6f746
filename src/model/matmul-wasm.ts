// The weight matmuls live in src/kernels/matmul/ (table, plan, job, chooser, config, weights); this module
// re-exports them for the forward pass, the CLI and the benches that import them from here.
export { configureMatmul, DEFAULT_ACTIVATIONS, matmulConfig, PARALLEL_MIN_MACS, type Activations, type MatmulConfig } from '../kernels/matmul/config.js';
export { ThreadChooser } from '../kernels/matmul/chooser.js';
export { allocInArena, allocWeight, arenaHalfNonFinite, freeInArena, wasmMatmulSupports, type PackedWeight } from '../kernels/matmul/weights.js';
export { matmulKernelFor, TILE_MIN_TOKENS_F32, TILE_MIN_TOKENS_Q8 } from '../kernels/matmul/plan.js';
export { closeMatmulThreads, matmulPrefetch, matmulSplitStats } from '../kernels/matmul/job.js';
export { wasmMatmul, wasmMatmulGroup, wasmMatmulGroupAt } from '../kernels/matmul/matmul.js';
