// An AttendJob as numbers in a shared Float64Array (plus its few distinct strings: formats and kernel keys), for the pool workers:
// JSON of a 32K-context job (130 segments, 37 KB) cost ~130 us to write and ~155 us to read per layer.
import type { AttendJob, RunPlan, SegPlan } from './attend-unit.js';

const HEADER = 17;
const RUN = 7;
const SEG = 3 + 2 * RUN;

/** Numbers a job with `segs` segments needs. */
export function packedLength(segs: number): number {
  return HEADER + SEG * segs;
}

/** Writes `job` into `nums` (length >= packedLength) and returns its distinct strings, indexed by the numbers. */
export function packJob(job: AttendJob, nums: Float64Array): string[] {
  const strings: string[] = [];
  const index = new Map<string, number>();
  const str = (s: string) => {
    let i = index.get(s);
    if (i === undefined) index.set(s, (i = strings.push(s) - 1));
    return i;
  };
  const h = [
    job.D,
    job.G,
    job.kvHeads,
    job.nq,
    job.qc,
    job.splits,
    job.chunk,
    job.q,
    job.qi,
    job.qd,
    job.lohi,
    job.softcap,
    job.part,
    job.slotBytes,
    job.units,
    job.segs.length,
    job.split0,
  ];
  nums.set(h, 0);
  const run = (r: RunPlan, o: number) => {
    nums[o] = str(r.format);
    nums[o + 1] = str(r.kernel);
    nums[o + 2] = r.addr;
    nums[o + 3] = r.headStride;
    nums[o + 4] = r.first;
    nums[o + 5] = r.rowBytes;
    nums[o + 6] = r.table;
  };
  job.segs.forEach((s, i) => {
    const o = HEADER + i * SEG;
    nums[o] = s.start;
    nums[o + 1] = s.count;
    nums[o + 2] = s.read;
    run(s.k, o + 3);
    run(s.v, o + 3 + RUN);
  });
  return strings;
}

/** The job packJob wrote. */
export function unpackJob(nums: Float64Array, strings: readonly string[]): AttendJob {
  const run = (o: number): RunPlan => ({
    format: strings[nums[o]!]!,
    kernel: strings[nums[o + 1]!]!,
    addr: nums[o + 2]!,
    headStride: nums[o + 3]!,
    first: nums[o + 4]!,
    rowBytes: nums[o + 5]!,
    table: nums[o + 6]!,
  });
  const segs: SegPlan[] = [];
  // Bounded by the buffer: a worker may read numbers a newer job is overwriting (its units then refuse it).
  const count = Math.min(nums[15]!, Math.floor((nums.length - HEADER) / SEG));
  for (let i = 0; i < count; i++) {
    const o = HEADER + i * SEG;
    segs.push({ start: nums[o]!, count: nums[o + 1]!, read: nums[o + 2]!, k: run(o + 3), v: run(o + 3 + RUN) });
  }
  const n = (i: number) => nums[i]!;
  return {
    D: n(0),
    G: n(1),
    kvHeads: n(2),
    nq: n(3),
    qc: n(4),
    splits: n(5),
    chunk: n(6),
    q: n(7),
    qi: n(8),
    qd: n(9),
    lohi: n(10),
    softcap: n(11),
    part: n(12),
    slotBytes: n(13),
    units: n(14),
    split0: n(16),
    segs,
  };
}
