// Pool worker: instantiates the kernel module over the shared arena memory, then loops: wait for a job
// (spin briefly, then Atomics.wait); attention units: take them from the shared counter until none are
// left; kernel calls: run the one in this worker's slot. Report each through the DONE word.
import { workerData } from './pool-worker-init.js';
import type { PoolInit as Init } from './pool-host-api.js';
import { bindJob, runUnit, scratchAt, unitKernel, type BoundJob, type UnitKernel } from './attend-unit.js';
import { unpackJob } from './job-pack.js';
import { CALL_SLOT, DONE, GEN, HOLD, JOB_CALLS, JOB_LEN, JOB_SHARED, KIND, QUIT, READY, SHARED_FN, SHARED_JOB, SHARED_WORKERS, recordError, sleepOnGen, takeUnit } from './pool-control.js';

const init = workerData as Init;
const { ctl, jobBytes, memory } = init;
const instance = new WebAssembly.Instance(init.module, { env: { memory } });
const ex = instance.exports as Record<string, unknown>;
// Export list order: the index pool.ts's runCalls puts in a call slot.
const fns = Object.values(ex) as ((...a: number[]) => void)[];
// Registry keys -> kernels, resolved from the kernel table as the main thread does (kept across jobs).
const kernels = new Map<string, UnitKernel>();
const resolve = (key: string): UnitKernel => {
  let kn = kernels.get(key);
  if (!kn) kernels.set(key, (kn = unitKernel(key, ex)));
  return kn;
};
const slot = init.id * CALL_SLOT;
const args: number[] = [];
const scratch = scratchAt(init.scratch);
// Read the generation before announcing readiness: a job posted right after the caller sees READY must count as new.
let seen = Atomics.load(ctl, GEN);
Atomics.add(ctl, READY, 1);
Atomics.notify(ctl, READY);

for (;;) {
  // Wait for the next job: spin for spinMs (all along while a caller holds the workers), then sleep on the generation word.
  const spinUntil = performance.now() + init.spinMs;
  let gen = Atomics.load(ctl, GEN);
  while (gen === seen) {
    if (performance.now() > spinUntil && Atomics.load(ctl, HOLD) === 0) sleepOnGen(ctl, seen);
    gen = Atomics.load(ctl, GEN);
  }
  seen = gen;
  if (Atomics.load(ctl, QUIT)) break;
  const kind = Atomics.load(ctl, KIND);
  if (kind === JOB_SHARED) {
    // export(job, this worker's thread number); the job hands out and counts its own units (nothing goes to
    // DONE), so a worker that wakes late, even for a newer job, just finds less or nothing to do.
    if (init.id >= Atomics.load(ctl, SHARED_WORKERS)) continue;
    try {
      fns[Atomics.load(ctl, SHARED_FN)]!(Atomics.load(ctl, SHARED_JOB) >>> 0, init.id + 1);
    } catch (e) {
      recordError(ctl, init.errText, e);
    }
    continue;
  }
  if (kind === JOB_CALLS) {
    const idx = init.calls[slot]!;
    args.length = init.calls[slot + 1]!;
    for (let i = 0; i < args.length; i++) args[i] = init.calls[slot + 2 + i]!;
    // A newer job replaced this one while we read it (we woke late): serve that one instead.
    if (Atomics.load(ctl, GEN) !== gen) continue;
    if (idx < 0) continue;
    try {
      fns[idx]!(...args);
    } catch (e) {
      recordError(ctl, init.errText, e);
    }
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
    continue;
  }
  let job: BoundJob;
  try {
    job = bindJob(unpackJob(init.jobNums, JSON.parse(new TextDecoder().decode(jobBytes.slice(0, Atomics.load(ctl, JOB_LEN)))) as string[]), resolve);
  } catch {
    continue; // rewritten by a newer job while we read it: that job's units carry a newer generation tag
  }
  for (;;) {
    const u = takeUnit(ctl, gen, job.units);
    if (u < 0) break;
    try {
      runUnit(ex, memory, job, u, scratch);
    } catch (e) {
      recordError(ctl, init.errText, e);
    }
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
  }
}
