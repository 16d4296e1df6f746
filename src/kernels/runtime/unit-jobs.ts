// The kind of job whose units the pool hands out from its shared counter (pool.ts runJob, pool-worker.ts).
// The runtime owns the workers, the counter and the shared buffers; what a job is and how a unit runs
// belongs to its kernels (today attention: kernels/attention/unit-jobs.ts registers it), so runtime imports
// no kernel folder.
import { DefinitionError, PoolError } from '../../errors.js';

/** Exports of one kernel instance, by name. */
export type InstanceExports = Readonly<Record<string, unknown>>;

export interface UnitJobs<J extends { readonly units: number } = { readonly units: number }, S = unknown> {
  /** Bytes of one thread's unit scratch in a space (the pool takes one per worker per space). */
  readonly scratchBytes: number;
  /** Numbers a packed job of `segs` segments takes (the pool sizes its shared buffer with it). */
  packedLength(segs: number): number;
  /** The job's segments (a job with more than the pool's buffer holds runs on the calling thread). */
  segments(job: J): number;
  /** Writes the job's numbers into nums; returns its strings (sent as JSON). */
  pack(job: J, nums: Float64Array): string[];
  /** The scratch at arena address `base` (scratchBytes long). */
  scratchAt(base: number): S;
  /** Runs unit `u` of the job against instance `ex` over `memory`. */
  run(ex: InstanceExports, memory: WebAssembly.Memory, job: J, u: number, scratch: S): void;
  /** Worker side: the job `pack` wrote, bound to this worker's instance `ex`. */
  unpack(nums: Float64Array, strings: string[], ex: InstanceExports): J;
  /**
   * The workers' script: a module that registers this kind, then imports runtime/pool-worker.js (a worker
   * must know the kind before its loop starts). Null in a browser, whose host runs the bundle built from it.
   */
  readonly workerUrl: URL | null;
}

let registered: UnitJobs | null = null;

/** Registers the one unit-job kind (a second, different one is a definition error). */
export function registerUnitJobs(kind: UnitJobs): void {
  if (registered && registered !== kind) throw new DefinitionError('a unit-job kind is already registered: the pool serves one');
  registered = kind;
}

/** The registered kind; throws when none is (the pool has nothing to run a unit with). */
export function unitJobs(): UnitJobs {
  if (!registered) throw new PoolError('no unit-job kind is registered (kernels/attention registers it when imported)');
  return registered;
}

/** The registered kind's scratch bytes, 0 before one registers (memory placement keeps room for it). */
export function unitScratchBytes(): number {
  return registered?.scratchBytes ?? 0;
}
