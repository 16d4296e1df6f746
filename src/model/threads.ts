// Thread budget for the matmuls: their threads are the process's one worker pool (src/kernels/pool.ts),
// which attention shares, so matmuls and attention never run two sets of spinning workers on the same cores.
import os from 'node:os';

/** Cores this process may use (os.availableParallelism where present). */
export function availableCores(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}
