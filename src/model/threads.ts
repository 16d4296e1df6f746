// Thread budget for the matmuls: their threads are the process's one worker pool (src/kernels/pool.ts),
// which attention shares, so matmuls and attention never run two sets of spinning workers on the same cores.
import os from 'node:os';

/** Read once: every matmul call asks, and os.availableParallelism() costs a syscall (1.3% of a decode step). */
const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;

/** Cores this process may use (os.availableParallelism where present). */
export function availableCores(): number {
  return cores;
}
