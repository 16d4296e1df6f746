// Pool worker: instantiates the kernel module over every memory space (spaces.ts), then loops: wait for a job
// (spin briefly, then Atomics.wait); unit jobs (unit-jobs.ts: attention's): take units from the shared
// counter until none are left; kernel calls: run the one in this worker's slot. Report each through the DONE
// word. The worker script imports the unit-job kind's registration before this module.
import { workerData } from './pool-worker-init.js';
import type { PoolInit as Init } from './pool-host-api.js';
import { unitJobs } from './unit-jobs.js';
import {
  CALL_SLOT,
  DONE,
  GEN,
  HOLD,
  JOB_CALLS,
  JOB_LEN,
  JOB_SHARED,
  KIND,
  QUIT,
  READY,
  SHARED_FN,
  SHARED_WORKERS,
  SPACE,
  recordError,
  sleepOnGen,
  takeUnit,
} from './pool-control.js';

const init = workerData as Init;
const { ctl, jobBytes, memories } = init;
const units = unitJobs();
/** One instance per space, each over its memory; a job's SPACE word says which one its addresses mean. */
const spaces = memories.map((memory, i) => {
  const ex = new WebAssembly.Instance(init.module, { env: { memory } }).exports as Record<string, unknown>;
  // Export list order: the index pool.ts's runCalls puts in a call slot.
  return { memory, ex, fns: Object.values(ex) as ((...a: number[]) => void)[], scratch: units.scratchAt(init.scratch[i]!) };
});
const slot = init.id * CALL_SLOT;

/**
 * A unit job's strings (its formats and kernel keys, JSON), parsed again only when their bytes change: one
 * decode step posts the same few strings for every layer. The bytes are copied out by a loop, since a
 * slice of the shared array cost ~3.5 us a job on V8 11.3 (for ~150 bytes), as long as a short unit.
 */
const seenBytes = new Uint8Array(jobBytes.length);
let seenLen = -1;
let seenStrings: string[] = [];
const decoder = new TextDecoder();
function jobStrings(len: number): string[] {
  let same = len === seenLen;
  for (let i = 0; i < len; i++) {
    const b = jobBytes[i]!;
    if (b !== seenBytes[i]) {
      seenBytes[i] = b;
      same = false;
    }
  }
  if (same) return seenStrings;
  // A parse that throws (bytes torn by a newer job) leaves nothing cached to match the next job against.
  seenLen = -1;
  seenStrings = JSON.parse(decoder.decode(seenBytes.subarray(0, len))) as string[];
  seenLen = len;
  return seenStrings;
}
const args: number[] = [];
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
  const space = Atomics.load(ctl, SPACE);
  const sp = spaces[space]!;
  if (kind === JOB_SHARED) {
    // export(job, this worker's thread number); the job hands out and counts its own units (nothing goes to
    // DONE), so a worker that wakes late, even for a newer job, just finds less or nothing to do.
    if (init.id >= Atomics.load(ctl, SHARED_WORKERS)) continue;
    try {
      sp.fns[Atomics.load(ctl, SHARED_FN)]!(Atomics.load(init.sharedJobs, space) >>> 0, init.id + 1);
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
      sp.fns[idx]!(...args);
    } catch (e) {
      recordError(ctl, init.errText, e);
    }
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
    continue;
  }
  let job: { readonly units: number };
  try {
    job = units.unpack(init.jobNums, jobStrings(Atomics.load(ctl, JOB_LEN)), sp.ex);
  } catch {
    continue; // rewritten by a newer job while we read it: that job's units carry a newer generation tag
  }
  for (;;) {
    const u = takeUnit(ctl, gen, job.units);
    if (u < 0) break;
    try {
      units.run(sp.ex, sp.memory, job, u, sp.scratch);
    } catch (e) {
      recordError(ctl, init.errText, e);
    }
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
  }
}
