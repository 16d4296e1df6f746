// The -t/--threads flag `run` and `chat` share: one count for both thread pools, validated the same way.
import type { Command } from 'commander';
import { setThreads } from '../kernels/runtime/pool.js';
import { configureMatmul } from '../kernels/matmul/config.js';
import { availableCores } from '../kernels/runtime/threads.js';
import { intArg } from './args.js';

export interface ThreadsFlag {
  threads?: number;
}

export function addThreadsFlag(cmd: Command): Command {
  return cmd.option('-t, --threads <n>', `matmul and attention threads (default: available cores, ${availableCores()})`, intArg('-t', 1));
}

/** -t drives both pools: matmul rows (kernels/runtime/threads.ts) and attention units (kernels/runtime/pool.ts). */
export function applyThreads(o: ThreadsFlag): number {
  const n = o.threads ?? availableCores();
  configureMatmul({ threads: n });
  setThreads(n);
  return n;
}
