// The matmul settings (activation path, how the pool is chosen); their threads are the process's one thread
// budget (kernels/runtime/threads.ts), which attention reads too.
import { ArgumentError } from '../../errors.js';
import { setThreadBudget, threadBudget } from '../runtime/threads.js';

/**
 * How activations enter the integer weight types: 'q8' quantizes them per block to int8 (per 32 values, per
 * 256 for K-quants, as llama.cpp's vec_dot_*_q8_0 / _q8_K do) and multiplies in integers; 'f32' keeps them
 * f32. Float weights (f32, f16, bf16) always use f32 activations.
 */
export type Activations = 'f32' | 'q8';

export interface MatmulConfig {
  activations: Activations;
  /** Threads including the caller's: the one thread budget (setting it here sets attention's too); capped at the cores. */
  threads: number;
  /** 'measured': per size class, use the pool only while it is measured faster; 'always': every call of at least PARALLEL_MIN_MACS. */
  threadChoice: 'measured' | 'always';
  /**
   * Run the relaxed-SIMD tiles where the loaded module is the relaxed build (src/kernels/runtime/relaxed.ts) and the
   * type has them; false runs the baseline tiles (same bits: for A/B runs and the gate).
   */
  relaxed: boolean;
  /**
   * Repack weights at load into the layout the loaded build's kernels read fastest (q4_0 -> q4_0x4, q4_K -> q4_Kx4, interleave.ts)
   * where it has one; false keeps the file's layout (same bits: for A/B runs and the gate). Read at load only.
   */
  repack: boolean;
}

/**
 * Default 'q8': bench/engine.ts measured it ~1.9x faster than 'f32' on q8_0 / q4_0 weights at decode, with
 * a relative output error of ~4e-3 (the bound is half an activation step per value; see matmul.test.ts).
 */
export const DEFAULT_ACTIVATIONS: Activations = 'q8';

/**
 * Calls below this many multiply-adds stay on one thread: a hand-off to a spinning worker costs a few us, to
 * a sleeping one ~40 us, about what 64K multiply-adds take (bench/engine.ts, dim 768 decode).
 */
export const PARALLEL_MIN_MACS = 1 << 17;

/**
 * Calls of at least this many multiply-adds (~5 ms on one thread) always use the pool, never timed against one
 * thread: units are taken dynamically, so a worker without a core costs at most its one unit (1/16 of the call on
 * 2 threads) plus a time slice, while each one-thread probe of a prefill-sized call cost its whole length twice over
 * (the first 512-token prefill of an 8B q4_0 model ran 9.3 tok/s, the next 11.2).
 */
export const ALWAYS_POOL_MACS = 1 << 28;

let config: Omit<MatmulConfig, 'threads'> = { activations: DEFAULT_ACTIVATIONS, threadChoice: 'measured', relaxed: true, repack: true };
export function configureMatmul(c: Partial<MatmulConfig>): void {
  if (c.activations !== undefined && c.activations !== 'f32' && c.activations !== 'q8')
    throw new ArgumentError(`activations must be 'f32' or 'q8', got '${c.activations}'`);
  if (c.relaxed !== undefined && typeof c.relaxed !== 'boolean') throw new ArgumentError(`relaxed must be true or false, got ${String(c.relaxed)}`);
  if (c.repack !== undefined && typeof c.repack !== 'boolean') throw new ArgumentError(`repack must be true or false, got ${String(c.repack)}`);
  const { threads, ...rest } = c;
  if (threads !== undefined) setThreadBudget(threads);
  config = { ...config, ...rest };
  view = null;
}

/** The settings with the budget's threads, re-made only when either changed (every matmul call reads it). */
let view: Readonly<MatmulConfig> | null = null;
export function matmulConfig(): Readonly<MatmulConfig> {
  const threads = threadBudget();
  if (view?.threads !== threads) view = { ...config, threads };
  return view;
}
