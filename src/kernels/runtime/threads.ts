// Thread budget for the matmuls: their threads are the process's one worker pool (kernels/runtime/pool.ts),
// which attention shares, so matmuls and attention never run two sets of spinning workers on the same cores.
import { coreCount } from './pool.js';

/** Read once: every matmul call asks, and the platform's core count can cost a syscall (1.3% of a decode step). */
let cores = 0;

/** Cores this process may use (the pool's host: os.availableParallelism, navigator.hardwareConcurrency). */
export function availableCores(): number {
  if (cores === 0) cores = coreCount();
  return cores;
}
