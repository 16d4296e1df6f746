// The matmul settings (activation path, threads, how the pool is chosen) and the cores they may use.
import { ArgumentError } from '../../errors.js';
import { coreCount } from '../runtime/pool.js';

/** Read once: every matmul call asks, and the platform's core count can cost a syscall (1.3% of a decode step). */
let cores = 0;
/** Cores this process may use (the pool's host: os.availableParallelism, navigator.hardwareConcurrency). */
export function matmulCores(): number {
  if (cores === 0) cores = coreCount();
  return cores;
}

/**
 * How activations enter the integer weight types: 'q8' quantizes them per block to int8 (per 32 values, per
 * 256 for K-quants, as llama.cpp's vec_dot_*_q8_0 / _q8_K do) and multiplies in integers; 'f32' keeps them
 * f32. Float weights (f32, f16, bf16) always use f32 activations.
 */
export type Activations = 'f32' | 'q8';

export interface MatmulConfig {
  activations: Activations;
  /** Threads including the caller's; capped at the cores available. */
  threads: number;
  /** 'measured': per size class, use the pool only while it is measured faster; 'always': every call of at least PARALLEL_MIN_MACS. */
  threadChoice: 'measured' | 'always';
  /**
   * Run the relaxed-SIMD tiles where the loaded module is the relaxed build (src/kernels/runtime/relaxed.ts) and the
   * type has them; false runs the baseline tiles (same bits: for A/B runs and the gate).
   */
  relaxed: boolean;
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

let config: MatmulConfig = { activations: DEFAULT_ACTIVATIONS, threads: matmulCores(), threadChoice: 'measured', relaxed: true };
export function configureMatmul(c: Partial<MatmulConfig>): void {
  if (c.activations !== undefined && c.activations !== 'f32' && c.activations !== 'q8')
    throw new ArgumentError(`activations must be 'f32' or 'q8', got '${c.activations}'`);
  if (c.threads !== undefined && (!Number.isInteger(c.threads) || c.threads < 1))
    throw new ArgumentError(`threads must be a positive integer, got ${c.threads}`);
  if (c.relaxed !== undefined && typeof c.relaxed !== 'boolean') throw new ArgumentError(`relaxed must be true or false, got ${String(c.relaxed)}`);
  config = { ...config, ...c };
}

export function matmulConfig(): Readonly<MatmulConfig> {
  return config;
}
