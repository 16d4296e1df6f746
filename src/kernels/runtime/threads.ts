// The process's one thread budget (the calling thread included): the matmuls (kernels/matmul) and attention
// (kernels/attention) both read it, as both run on the one worker pool (pool.ts), so they never run two sets
// of spinning workers on the same cores. KVPACK_THREADS sets it for the process; setThreadBudget (the CLI's
// -t / --threads, which wins over the variable; configureMatmul; startThreads in a page) sets it after.
import { ArgumentError } from '../../errors.js';
import { host } from './pool-host.js';

/** Cores this process may use (the pool's host: os.availableParallelism, navigator.hardwareConcurrency). */
export function availableCores(): number {
  return host.cores;
}

/** KVPACK_THREADS as given ('' when unset or outside Node). */
function envThreads(): string {
  return typeof process !== 'undefined' ? (process.env?.['KVPACK_THREADS'] ?? '') : '';
}

/** The budget set by setThreadBudget, or null: KVPACK_THREADS, else every core. */
let budget: number | null = null;

/**
 * KVPACK_THREADS as a thread count, or null when unset. A value that is not a positive integer is an
 * error (never read as some other count): the first reader of the budget throws it.
 */
export function threadsFromEnv(): number | null {
  const s = envThreads().trim();
  if (s === '') return null;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new ArgumentError(`KVPACK_THREADS must be a positive integer, got '${s}'`);
  return n;
}

/** Threads the matmuls and attention may use: the budget set, else KVPACK_THREADS, else every core; at most the cores. */
export function threadBudget(): number {
  if (budget === null) budget = Math.min(threadsFromEnv() ?? availableCores(), availableCores());
  return budget;
}

/** Sets the budget for matmuls and attention (capped at the cores: never more spinning threads than cores). */
export function setThreadBudget(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new ArgumentError(`threads must be a positive integer, got ${n}`);
  budget = Math.min(n, availableCores());
}
