// The -t/--threads flag `run` and `chat` share: it sets the one thread budget (kernels/runtime/threads.ts)
// that matmuls and attention both read, and wins over KVPACK_THREADS.
import type { Command } from 'commander';
import { availableCores, setThreadBudget, threadBudget } from '../kernels/runtime/threads.js';
import { intArg } from './args.js';

export interface ThreadsFlag {
  threads?: number;
}

export function addThreadsFlag(cmd: Command): Command {
  return cmd.option(
    '-t, --threads <n>',
    `matmul and attention threads (default: KVPACK_THREADS if set, else the available cores, ${availableCores()})`,
    intArg('-t', 1),
  );
}

/** The threads matmuls and attention use: -t when given, else KVPACK_THREADS, else every core (a bad KVPACK_THREADS throws). */
export function applyThreads(o: ThreadsFlag): number {
  if (o.threads !== undefined) setThreadBudget(Math.min(o.threads, availableCores()));
  return threadBudget();
}
