// What the worker pool (pool.ts) needs from its platform: Node's worker_threads (pool-host.ts) or a
// browser's Web Workers (pool-host.browser.ts, swapped in by scripts/build-browser.mjs). Types only.

/** Everything a pool worker receives at start (pool-worker.ts). */
export interface PoolInit {
  id: number;
  /** Call slots [workers, CALL_SLOT] f64. */
  calls: Float64Array;
  /** Every memory space's memory (spaces.ts), by space index; jobs name theirs in the SPACE word. */
  memories: WebAssembly.Memory[];
  module: WebAssembly.Module;
  /** Per space, the address of its shared matmul job (fixed once posted; 0 until then). */
  sharedJobs: Int32Array;
  ctl: Int32Array;
  /** The unit job's strings (JSON) and its numbers (unit-jobs.ts UnitJobs.pack). */
  jobBytes: Uint8Array;
  jobNums: Float64Array;
  /** The first failure's text (pool-control.ts recordError). */
  errText: Uint8Array;
  /** Per space, this worker's unit scratch there. */
  scratch: number[];
  spinMs: number;
}

export interface PoolHost {
  /** Cores the machine reports. */
  readonly cores: number;
  /** Why workers cannot run here, '' when they can. */
  readonly unavailable: string;
  /**
   * True when the caller may block while its workers start (Node). A browser worker cannot start while
   * the thread that created it blocks, so there the pool starts only through pool.ts's async startPool.
   */
  readonly blockingStart: boolean;
  /**
   * Starts one worker with `init`, running `script`: the unit-job kind's worker module, which ends by
   * importing pool-worker.js (Node). A browser runs the pool-worker.js bundle built from it (script null).
   */
  spawn(init: PoolInit, script: URL | null): { terminate(): unknown };
}
