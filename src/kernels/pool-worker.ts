// Pool worker: instantiates the kernel module over the shared arena memory, then loops: wait for a job
// (spin briefly, then Atomics.wait), take units from the shared counter until none are left, report.
import { workerData } from 'node:worker_threads';
import { runUnit, scratchAt, type AttendJob } from './attend-unit.js';

interface Init {
  memory: WebAssembly.Memory;
  module: WebAssembly.Module;
  ctl: Int32Array;
  jobBytes: Uint8Array;
  scratch: number;
  spinMs: number;
}

const GEN = 0;
const NEXT = 1;
const DONE = 2;
const QUIT = 3;
const READY = 4;
const JOB_LEN = 5;
const ERR = 6;

const init = workerData as Init;
const { ctl, jobBytes, memory } = init;
const instance = new WebAssembly.Instance(init.module, { env: { memory } });
const ex = instance.exports as Record<string, unknown>;
const scratch = scratchAt(init.scratch);
Atomics.add(ctl, READY, 1);
Atomics.notify(ctl, READY);

let seen = Atomics.load(ctl, GEN);
for (;;) {
  // Wait for the next job: spin for spinMs, then sleep on the generation word.
  const spinUntil = performance.now() + init.spinMs;
  let gen = Atomics.load(ctl, GEN);
  while (gen === seen) {
    if (performance.now() > spinUntil) Atomics.wait(ctl, GEN, seen);
    gen = Atomics.load(ctl, GEN);
  }
  seen = gen;
  if (Atomics.load(ctl, QUIT)) break;
  const job = JSON.parse(new TextDecoder().decode(jobBytes.slice(0, Atomics.load(ctl, JOB_LEN)))) as AttendJob;
  for (;;) {
    const u = Atomics.add(ctl, NEXT, 1);
    if (u >= job.units) break;
    try {
      runUnit(ex, memory, job, u, scratch);
    } catch {
      Atomics.store(ctl, ERR, 1);
    }
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
  }
}
