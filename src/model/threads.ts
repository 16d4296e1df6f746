// Thread budget for the matmuls: a ThreadPool hands one kernel call per thread (a share of a weight's rows)
// to the process's one worker pool (src/kernels/pool.ts), which attention shares, so matmuls and attention
// never run two sets of spinning workers on the same cores.
import { ArgumentError, PoolError, WasmUnavailableError } from '../errors.js';
import { wasmKernels, type WasmKernels } from '../kernels/wasm.js';
import { coreCount, runCalls } from '../kernels/pool.js';

/** Cores this process may use (the pool's host: os.availableParallelism, navigator.hardwareConcurrency). */
export function availableCores(): number {
  return coreCount();
}

/** Runs one kernel call per thread (the caller's thread included) and returns when all are done. */
export class ThreadPool {
  /** Threads including the caller's. */
  readonly threads: number;
  private readonly k: WasmKernels;
  private readonly names: ReadonlySet<string>;
  private closed = false;

  /** `names`: the kernel exports this pool's callers may run. */
  constructor(threads: number, names: readonly string[]) {
    if (!Number.isInteger(threads) || threads < 1) throw new ArgumentError(`threads must be a positive integer, got ${threads}`);
    const k = wasmKernels();
    if (!k) throw new WasmUnavailableError('threads need the wasm kernels');
    this.k = k;
    this.names = new Set(names);
    // Never more threads than cores: a spinning thread without a core of its own stalls the others.
    this.threads = Math.min(threads, availableCores());
  }

  /**
   * calls[i] = [kernel name, args] for thread i; calls[0] runs on the caller's thread. At most `threads`
   * calls. Throws when a worker's call trapped.
   */
  run(calls: ReadonlyArray<readonly [string, readonly number[]]>): void {
    if (this.closed) throw new PoolError('thread pool is closed');
    if (calls.length > this.threads) throw new ArgumentError(`${calls.length} calls for ${this.threads} threads`);
    for (const [name] of calls) if (!this.names.has(name)) throw new ArgumentError(`thread pool: kernel '${name}' not registered`);
    runCalls(this.k, calls);
  }

  /** Refuses further calls (the shared workers stay for other users; they never keep the process alive). */
  close(): void {
    this.closed = true;
  }
}
