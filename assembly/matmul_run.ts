// Threaded matmuls, split dynamically: a job in shared memory names one kernel call over `rows` weight rows,
// cut into units of `unitRows`; every thread (the caller and each pool worker) runs matmulRun(job, thread),
// which takes units from the job's counter until none are left, so a thread that starts late (a stalled
// vCPU, a sleeping worker) just takes fewer and holds up no one. The counter carries the job's tag and unit
// count, and the rest of the job is read only after a unit is taken: a worker that woke for an old job
// cannot take a unit of a newer one under the old one's arguments, and the caller rewrites a job only once
// every unit of the one before is done.
import { matmulF32Act, matmulQ8Act } from './matmul';
import { matmulF32Tiled, matmulQ8Tiled } from './matmul_tile';
import { matmulVec } from './matmul_vec';

// Kernel ids (src/model/matmul-wasm.ts names them).
export const K_VEC: i32 = 0;
export const K_Q8_ACT: i32 = 1;
export const K_F32_ACT: i32 = 2;
export const K_Q8_TILED: i32 = 3;
export const K_F32_TILED: i32 = 4;

// Job layout (64-byte aligned): ticket u64 (tag << 32 | units << 16 | next unit) | done i32 (units
// finished) | kernel | then the call: type, w, rowBytes, rows, cols, xq, xd, xs, n, y, yStride, unitRows,
// scratch, scratchStride. The ticket, the done count and the fields sit on cache lines of their own, so
// taking a unit does not evict the fields another thread is about to read.
const TICKET: usize = 0;
const DONE: usize = 64;
const F: usize = 128;

/** Bytes of one job. */
export function matmulJobBytes(): i32 {
  return <i32>(F + 15 * 4);
}

/** Address of a job's done count (the i32 a waiting caller watches). */
export function matmulJobDone(job: usize): usize {
  return job + DONE;
}

@inline function field(job: usize, i: usize): i32 {
  return load<i32>(job + F + (i << 2));
}

/**
 * Writes a job and arms its counter (the done count first, the ticket last, both atomically, so a thread
 * that sees the ticket sees the job). Returns the number of units (at most 0xffff).
 */
export function matmulPost(job: usize, kernel: i32, type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, unitRows: i32, scratch: usize, scratchStride: i32, tag: u32): i32 {
  const units = (rows + unitRows - 1) / unitRows;
  const f = job + F;
  store<i32>(f, kernel);
  store<i32>(f, type, 4);
  store<i32>(f, <i32>w, 8);
  store<i32>(f, rowBytes, 12);
  store<i32>(f, rows, 16);
  store<i32>(f, cols, 20);
  store<i32>(f, <i32>xq, 24);
  store<i32>(f, <i32>xd, 28);
  store<i32>(f, <i32>xs, 32);
  store<i32>(f, n, 36);
  store<i32>(f, <i32>y, 40);
  store<i32>(f, yStride, 44);
  store<i32>(f, unitRows, 48);
  store<i32>(f, <i32>scratch, 52);
  store<i32>(f, scratchStride, 56);
  atomic.store<i32>(job + DONE, 0);
  atomic.store<u64>(job + TICKET, (<u64>tag << 32) | (<u64>units << 16));
  return units;
}

/** Takes the job's next unit, or -1 when none is left. */
@inline function takeUnit(job: usize): i32 {
  for (;;) {
    const t = atomic.load<u64>(job + TICKET);
    const next = <i32>(t & 0xffff);
    if (next >= <i32>((t >> 16) & 0xffff)) return -1;
    if (atomic.cmpxchg<u64>(job + TICKET, t, t + 1) == t) return next;
  }
  return -1;
}

/** Runs units of the job until none is left; `thread` picks this thread's scratch. Returns the units it ran. */
export function matmulRun(job: usize, thread: i32): i32 {
  let ran = 0;
  for (;;) {
    const u = takeUnit(job);
    if (u < 0) return ran;
    const kernel = field(job, 0);
    const type = field(job, 1);
    const rowBytes = field(job, 3);
    const rows = field(job, 4);
    const cols = field(job, 5);
    const xq = <usize>field(job, 6);
    const xd = <usize>field(job, 7);
    const xs = <usize>field(job, 8);
    const n = field(job, 9);
    const yStride = field(job, 11);
    const unitRows = field(job, 12);
    const scratch = <usize>field(job, 13) + <usize>thread * <usize>field(job, 14);
    const r0 = u * unitRows;
    const nr = min(unitRows, rows - r0);
    const w = <usize>field(job, 2) + <usize>r0 * <usize>rowBytes;
    const y = <usize>field(job, 10) + (<usize>r0 << 2);
    if (kernel == K_VEC) matmulVec(type, w, rowBytes, nr, cols, xq, xd, xs, n, y, yStride);
    else if (kernel == K_Q8_ACT) matmulQ8Act(type, w, rowBytes, nr, cols, xq, xd, xs, n, y, yStride, scratch);
    else if (kernel == K_F32_ACT) matmulF32Act(type, w, rowBytes, nr, cols, xq, n, y, yStride, scratch);
    else if (kernel == K_Q8_TILED) matmulQ8Tiled(type, w, rowBytes, nr, cols, xq, xd, xs, n, y, yStride, scratch);
    else matmulF32Tiled(type, w, rowBytes, nr, cols, xq, n, y, yStride, scratch);
    ran++;
    // The thread that finishes the last unit wakes a caller sleeping on the done count.
    if (atomic.add<i32>(job + DONE, 1) + 1 == ((rows + unitRows - 1) / unitRows)) atomic.notify(job + DONE, 1);
  }
  return ran;
}
