// Attention's unit jobs as the pool's one unit-job kind (runtime/unit-jobs.ts): the pool hands out the
// units, this says how a job is packed for the workers and how a unit runs. Registered when imported.
import { registerUnitJobs, type InstanceExports, type UnitJobs } from '../runtime/unit-jobs.js';
import { bindJob, runUnit, scratchAt, THREAD_SCRATCH_BYTES, unitKernel, type BoundJob, type UnitKernel, type UnitScratch } from './attend-unit.js';
import { packedLength, packJob, unpackJob } from './job-pack.js';
import { poolWorkerUrl } from './pool-worker-url.js';

/** Per worker instance, registry keys -> kernels, resolved from the kernel table once (kept across jobs). */
const resolved = new WeakMap<InstanceExports, Map<string, UnitKernel>>();

export const ATTENTION_UNITS: UnitJobs<BoundJob, UnitScratch> = {
  scratchBytes: THREAD_SCRATCH_BYTES,
  packedLength,
  segments: (job) => job.segs.length,
  pack: packJob,
  scratchAt,
  run: runUnit,
  unpack(nums, strings, ex) {
    let kernels = resolved.get(ex);
    if (!kernels) resolved.set(ex, (kernels = new Map()));
    const mine = kernels;
    return bindJob(unpackJob(nums, strings), (key) => {
      let kn = mine.get(key);
      if (!kn) mine.set(key, (kn = unitKernel(key, ex)));
      return kn;
    });
  },
  workerUrl: poolWorkerUrl(),
};

registerUnitJobs(ATTENTION_UNITS);
