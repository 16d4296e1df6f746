// One attention work unit over arena memory: a kv head, a chunk of queries and a stretch of positions,
// producing unnormalized partial results (acc, running max, running sum) that attend.ts merges. Plain data
// in (kernels named by their registry key, bound to callables once per job by bindJob), so the same code
// runs on the main thread and in pool workers.
import { getFormat } from '../../formats/registry.js';
import { KernelError, ShapeError } from '../../errors.js';
import { refKernel } from './ref-ops.js';
import { tableRow, type Op } from './table.js';
import type { Abi } from './abi.js';
import type { AccumulateKernel, ScoresKernel } from './registry.js';
import { TILE_BYTES } from '../runtime/wasm.js';

/** Where one segment's K or V run lives and which kernel reads it. */
export interface RunPlan {
  readonly format: string;
  /** Registry key of the kernel (`format:op:precision:impl`): a kernel table row, or a JS kernel. */
  readonly kernel: string;
  /** Absolute address of head 0's origin, bytes between kv heads, origin-relative token of the segment start. */
  readonly addr: number;
  readonly headStride: number;
  readonly first: number;
  /** Token-axis row bytes (0 for channel runs). */
  readonly rowBytes: number;
  /** Arena address of the kernel's lookup table (0: none). */
  readonly table: number;
}

/** Who reads a segment (kernels/attention/view.ts SegmentRead): every row, rows whose bound lies above (packed), at or below (exact). */
export const READ_ALL = 0;
export const READ_PACKED = 1;
export const READ_EXACT = 2;

export interface SegPlan {
  readonly start: number;
  readonly count: number;
  /** READ_ALL | READ_PACKED | READ_EXACT. */
  readonly read: number;
  readonly k: RunPlan;
  readonly v: RunPlan;
}

/** A whole attention call as plain data (posted to workers as JSON). Addresses are arena byte offsets. */
export interface AttendJob {
  readonly D: number;
  /** Query heads per kv head. */
  readonly G: number;
  readonly kvHeads: number;
  readonly nq: number;
  /** Queries per unit (rows = qc * G). */
  readonly qc: number;
  /** Position splits per (kv head, query chunk): splits [split0 + sp) of SPLIT_POSITIONS each, whatever the threads. */
  readonly splits: number;
  readonly split0: number;
  /** Positions per scores chunk (the online-softmax step): CHUNK_POSITIONS, chunks at its multiples. */
  readonly chunk: number;
  /** Scaled q, [kvHeads, nq, G, D] f32. */
  readonly q: number;
  /** Integer q ([kvHeads, nq, G, D] i16) and its block scales ([.., D/32] f32); 0 = f32 scores. */
  readonly qi: number;
  readonly qd: number;
  /** [nq, 3] i32: visible positions [lo, hi) of each query and its exact-from bound x. */
  readonly lohi: number;
  readonly softcap: number;
  readonly segs: readonly SegPlan[];
  /** Partial results: unit u at part + u * slotBytes: acc [rows, D] f32 | m [rows] f32 | l [rows] f64. */
  readonly part: number;
  readonly slotBytes: number;
  readonly units: number;
}

/**
 * Per-thread scratch: the kernels' decode tile, the scores chunk [rows, chunk] f32, the band's second
 * scores / weights [rows, chunk] f32 (rows whose bound differs: see runUnit), lohi [rows, 2] i32.
 */
export interface UnitScratch {
  readonly tile: number;
  readonly scores: number;
  readonly band: number;
  readonly lohi: number;
}

/**
 * Positions per online-softmax chunk, at fixed multiples of it: a row's chunks, and so its float order,
 * do not depend on which rows share its unit (decode's [G, chunk] scores stay in L2 between the passes).
 */
export const CHUNK_POSITIONS = 2048;
/**
 * Positions per split of a head's sequence, at fixed multiples of it whatever the thread count (one thread
 * runs the same splits); merged in split order. At 2048 q4_0 decode over 4K positions (8 kv heads) cost 3-5%
 * more CPU than no splits on one thread (bench/attention-ab.ts); beyond 4K two threads share a head's splits.
 */
export const SPLIT_POSITIONS = 4096;
/** Largest rows per unit (queries x query heads of one kv head) the scratch holds (attend.ts packs 64). */
export const MAX_UNIT_ROWS = 64;
/** Scores scratch per thread (bytes): the scores and the band buffer, [MAX_UNIT_ROWS, CHUNK_POSITIONS] f32 each. */
export const SCORES_BYTES = 2 * MAX_UNIT_ROWS * CHUNK_POSITIONS * 4;
export const LOHI_BYTES = MAX_UNIT_ROWS * 8;

/** Scratch one thread needs for runUnit. */
export const THREAD_SCRATCH_BYTES = TILE_BYTES + SCORES_BYTES + LOHI_BYTES;

export function scratchAt(base: number): UnitScratch {
  return { tile: base, scores: base + TILE_BYTES, band: base + TILE_BYTES + SCORES_BYTES / 2, lohi: base + TILE_BYTES + SCORES_BYTES };
}

type Fn = (...a: number[]) => void;

/** Whole-memory views of the last buffer seen (a grow gives a new one): a unit makes no views of its own. */
let seen: { buf: ArrayBufferLike; u8: Uint8Array; i32: Int32Array; f32: Float32Array; f64: Float64Array } | null = null;
function viewsOf(buf: ArrayBufferLike): NonNullable<typeof seen> {
  if (seen?.buf !== buf) seen = { buf, u8: new Uint8Array(buf), i32: new Int32Array(buf), f32: new Float32Array(buf), f64: new Float64Array(buf) };
  return seen;
}
export type Exports = Record<string, unknown>;

/** Bytes of one partial slot for `rows` rows (16-byte aligned parts). */
export function slotBytes(rows: number, D: number): number {
  return rows * D * 4 + Math.ceil((rows * 4) / 16) * 16 + rows * 8;
}

/** Unit u -> kv head, query chunk, split. */
export function unitCoords(job: AttendJob, u: number): { h: number; qci: number; sp: number } {
  const nQC = Math.ceil(job.nq / job.qc);
  const sp = u % job.splits;
  const hq = (u - sp) / job.splits;
  return { h: Math.floor(hq / nQC), qci: hq % nQC, sp };
}

/**
 * Positions [a, b) unit u covers: its query chunk's visible span within split split0 + sp (fixed boundaries).
 * lohi holds the job's [nq, 3] bounds from element `at` on.
 */
export function unitSpan(job: AttendJob, lohi: Int32Array, qci: number, sp: number, at = 0): [number, number] {
  const i0 = qci * job.qc;
  const n = Math.min(job.qc, job.nq - i0);
  let L0 = Infinity;
  let L1 = 0;
  for (let i = i0; i < i0 + n; i++) {
    L0 = Math.min(L0, lohi[at + 3 * i]!);
    L1 = Math.max(L1, lohi[at + 3 * i + 1]!);
  }
  const s = (job.split0 + sp) * SPLIT_POSITIONS;
  return [Math.max(L0, s), Math.min(L1, s + SPLIT_POSITIONS)];
}

/**
 * A kernel ready to call: a wasm export (checked present) with its ABI, or a JS kernel over typed arrays.
 * runUnit calls exports as `ex[name](...)`: V8 ran the kernels ~3% slower through a function held in a
 * per-job object (bench: q4_0/q2k decode at 1K positions, main vs branch alternated).
 */
export type UnitKernel = { readonly abi: Abi; readonly name: string } | { readonly abi: 'js'; readonly fn: ScoresKernel | AccumulateKernel };

export interface BoundRun extends RunPlan {
  readonly call: UnitKernel;
}
export interface BoundSeg {
  readonly start: number;
  readonly count: number;
  readonly read: number;
  readonly k: BoundRun;
  readonly v: BoundRun;
}
export interface BoundJob extends AttendJob {
  readonly segs: readonly BoundSeg[];
}

const refKernels = new Map<string, UnitKernel>();

/**
 * The callable behind a registry key: a kernel table row's export, else `js(key)` (the main thread's
 * registered kernels), else the reference kernel for a `:ref` key. Throws for keys nothing serves here.
 */
export function unitKernel(key: string, ex: Exports, js?: (key: string) => ScoresKernel | AccumulateKernel | undefined): UnitKernel {
  const row = tableRow(key);
  if (row) {
    if (typeof ex[row.export] !== 'function') throw new KernelError('UNKNOWN_KERNEL', `kernel ${key}: the module has no export '${row.export}'`);
    return { abi: row.abi, name: row.export };
  }
  const mine = js?.(key);
  if (mine) return { abi: 'js', fn: mine };
  let ref = refKernels.get(key);
  if (!ref) {
    const [format, op, , impl] = key.split(':');
    if (impl !== 'ref' || (op !== 'scores' && op !== 'accumulate')) throw new KernelError('UNKNOWN_KERNEL', `kernel ${key} is not available on this thread`);
    refKernels.set(key, (ref = { abi: 'js', fn: refKernel(getFormat(format!), op as Op) as ScoresKernel | AccumulateKernel }));
  }
  return ref;
}

/**
 * Binds every run to its kernel, once per job (never per unit or block). Fields are copied by name, not by
 * spread: a worker binds every job it takes, and spreading the job and its runs cost ~6 us for three segments
 * (V8 11.3), as long as two units of a short decode; by name it is ~1 us.
 */
export function bindSegs(segs: readonly SegPlan[], resolve: (key: string) => UnitKernel): BoundJob['segs'] {
  const bind = (r: RunPlan): BoundRun => ({
    format: r.format,
    kernel: r.kernel,
    addr: r.addr,
    headStride: r.headStride,
    first: r.first,
    rowBytes: r.rowBytes,
    table: r.table,
    call: resolve(r.kernel),
  });
  return segs.map((s) => ({ start: s.start, count: s.count, read: s.read, k: bind(s.k), v: bind(s.v) }));
}

export function bindJob(job: AttendJob, resolve: (key: string) => UnitKernel): BoundJob {
  return {
    D: job.D,
    G: job.G,
    kvHeads: job.kvHeads,
    nq: job.nq,
    qc: job.qc,
    splits: job.splits,
    split0: job.split0,
    chunk: job.chunk,
    q: job.q,
    qi: job.qi,
    qd: job.qd,
    lohi: job.lohi,
    softcap: job.softcap,
    part: job.part,
    slotBytes: job.slotBytes,
    units: job.units,
    segs: bindSegs(job.segs, resolve),
  };
}

/** A run's stretch [u0, u1) of one chunk. */
interface Part {
  readonly seg: BoundSeg;
  readonly u0: number;
  readonly u1: number;
}

/** One chunk in position order: segments every row reads, and between them the packed and exact stretches. */
type Group = { readonly all: Part } | { readonly packed: Part[]; readonly exact: Part[] };

/**
 * The groups of chunk [c0, c1) for rows whose bounds lie in [xmin, xmax]: a packed run is read below xmax,
 * an exact one from xmin (rows between pick per position). Sinks and anchors cut the free stretches, so
 * within a group every row's packed positions come before its exact ones.
 */
function chunkGroups(segs: readonly BoundSeg[], first: number, c0: number, c1: number, xmin: number, xmax: number): Group[] {
  const out: Group[] = [];
  let free: { packed: Part[]; exact: Part[] } | null = null;
  for (let si = first; si < segs.length && segs[si]!.start < c1; si++) {
    const seg = segs[si]!;
    const s0 = Math.max(c0, seg.start);
    const s1 = Math.min(c1, seg.start + seg.count);
    if (s0 >= s1) continue;
    if (seg.read === READ_ALL) {
      free = null;
      out.push({ all: { seg, u0: s0, u1: s1 } });
      continue;
    }
    if (!free) out.push((free = { packed: [], exact: [] }));
    if (seg.read === READ_PACKED) {
      if (s0 < Math.min(s1, xmax)) free.packed.push({ seg, u0: s0, u1: Math.min(s1, xmax) });
    } else if (Math.max(s0, xmin) < s1) {
      free.exact.push({ seg, u0: Math.max(s0, xmin), u1: s1 });
    }
  }
  return out;
}

/**
 * Runs unit u: fills its partial slot (acc, m, l) from nothing. Every row gets the bits it would get alone:
 * chunks and splits sit at fixed positions, each kernel computes a row the same whatever the row count, and
 * accumulation adds token by token in position order, so a zero weight (a position a row does not read)
 * adds nothing. In the band, rows pick the packed or the exact score per position, and V is accumulated
 * twice with weights masked per row (packed below the row's bound, then exact from it).
 */
export function runUnit(ex: Exports, memory: WebAssembly.Memory, job: BoundJob, u: number, sc: UnitScratch): void {
  const { D, G, qc, nq } = job;
  const buf = memory.buffer;
  const { u8, i32, f32, f64 } = viewsOf(buf);
  // The job's lohi [nq, 3] i32 from jl0 on.
  const jl = i32;
  const jl0 = job.lohi >>> 2;
  const { h, qci, sp } = unitCoords(job, u);
  const i0 = qci * qc;
  const n = Math.min(qc, nq - i0);
  const rows = n * G;
  const [a, b] = unitSpan(job, jl, qci, sp, jl0);
  const slot = job.part + u * job.slotBytes;
  const accAddr = slot;
  const mAddr = slot + rows * D * 4;
  const lAddr = mAddr + Math.ceil((rows * 4) / 16) * 16;
  f32.fill(0, accAddr >>> 2, (accAddr >>> 2) + rows * D);
  f32.fill(-Infinity, mAddr >>> 2, (mAddr >>> 2) + rows);
  f64.fill(0, lAddr >>> 3, (lAddr >>> 3) + rows);
  if (a >= b) return;
  if (rows > MAX_UNIT_ROWS) throw new ShapeError(`attend: ${rows} rows per unit exceed ${MAX_UNIT_ROWS}`);
  let xmin = Infinity;
  let xmax = -Infinity;
  for (let i = i0; i < i0 + n; i++) {
    xmin = Math.min(xmin, jl[jl0 + 3 * i + 2]!);
    xmax = Math.max(xmax, jl[jl0 + 3 * i + 2]!);
  }
  const qRowsOff = (h * nq + i0) * G * D;
  const qAddr = job.q + qRowsOff * 4;
  const qiAddr = job.qi + qRowsOff * 2;
  const qdAddr = job.qd + (qRowsOff / 32) * 4;
  // This unit's per-chunk row bounds [rows, 2] i32 from lohi0 on.
  const lohi = i32;
  const lohi0 = sc.lohi >>> 2;
  const softmaxChunk = ex['softmaxChunk'] as Fn;
  const segs = job.segs;
  // Segments are ordered by start: skip those wholly before the unit, then walk it chunk by chunk.
  let first = 0;
  while (first < segs.length && segs[first]!.start + segs[first]!.count <= a) first++;
  // Views over the whole scratch (a chunk's rows are span apart); the helpers read the chunk's c0 and span.
  // (Made only where JS reads them: JS kernels, the band's picks, soft-capping.)
  let scoresV: Float32Array | undefined;
  let bandV: Float32Array | undefined;
  const scoresOf = () => (scoresV ??= new Float32Array(buf, sc.scores, rows * job.chunk));
  const bandOf = () => (bandV ??= new Float32Array(buf, sc.band, rows * job.chunk));
  // Rows of this unit whose bounds differ: exact scores and weights go to the band buffer, each row picks.
  const mixed = xmin < xmax;
  let c0 = a;
  let span = 0;
  // Scores q.k of [s0, s1) into the scores or band buffer ([rows, span]): each K block read once for all rows.
  const scoresInto = (pt: Part, toBand: boolean) => {
    const dstAddr = toBand ? sc.band : sc.scores;
    const { seg, u0: s0, u1: s1 } = pt;
    const k = seg.k;
    const t0 = k.first + (s0 - seg.start);
    const base = k.addr + h * k.headStride;
    const out = dstAddr + (s0 - c0) * 4;
    const call = k.call;
    if (call.abi === 'js') {
      const dst = toBand ? bandOf() : scoresOf();
      (call.fn as ScoresKernel)(new Float32Array(buf, qAddr, rows * D), 0, rows, D, u8, base, t0, s1 - s0, dst, s0 - c0, span);
    } else if (call.abi === 'scores-channel') {
      (ex[call.name] as Fn)(qAddr, rows, D, base, t0, s1 - s0, out, span, sc.tile, k.table);
    } else if (call.abi === 'scores-int') {
      (ex[call.name] as Fn)(qiAddr, qdAddr, rows, D, base + t0 * k.rowBytes, s1 - s0, out, span);
    } else {
      (ex[call.name] as Fn)(qAddr, rows, D, base + t0 * k.rowBytes, s1 - s0, out, span, sc.tile);
    }
  };
  // acc += weights (the scores or band buffer, [rows, span]) x V of [s0, s1), token by token.
  const accumFrom = (pt: Part, fromBand: boolean) => {
    const srcAddr = fromBand ? sc.band : sc.scores;
    const { seg, u0: s0, u1: s1 } = pt;
    const v = seg.v;
    const t0 = v.first + (s0 - seg.start);
    const base = v.addr + h * v.headStride;
    const w = srcAddr + (s0 - c0) * 4;
    const call = v.call;
    if (call.abi === 'js') {
      const src = fromBand ? bandOf() : scoresOf();
      (call.fn as AccumulateKernel)(src, s0 - c0, span, rows, D, u8, base, t0, s1 - s0, new Float32Array(buf, accAddr, rows * D), 0);
    } else if (call.abi === 'accum-channel') {
      (ex[call.name] as Fn)(w, span, rows, D, base, t0, s1 - s0, accAddr, sc.tile, v.table);
    } else {
      (ex[call.name] as Fn)(w, span, rows, D, base + t0 * v.rowBytes, s1 - s0, accAddr, sc.tile);
    }
  };
  /** fn(row offset into a [rows, span] buffer minus c0, the row's bound) for every row. */
  const eachRow = (fn: (r: number, x: number) => void) => {
    for (let i = 0; i < n; i++) {
      const x = jl[jl0 + 3 * (i0 + i) + 2]!;
      for (let g = 0; g < G; g++) fn((i * G + g) * span - c0, x);
    }
  };

  for (let c1 = 0; c0 < b; c0 = c1) {
    c1 = Math.min(b, (Math.floor(c0 / job.chunk) + 1) * job.chunk);
    span = c1 - c0;
    for (let i = 0; i < n; i++) {
      const lo = Math.min(span, Math.max(0, jl[jl0 + 3 * (i0 + i)]! - c0));
      const hi = Math.min(span, Math.max(0, jl[jl0 + 3 * (i0 + i) + 1]! - c0));
      for (let g = 0; g < G; g++) {
        lohi[lohi0 + 2 * (i * G + g)] = lo;
        lohi[lohi0 + 2 * (i * G + g) + 1] = hi;
      }
    }
    while (first < segs.length && segs[first]!.start + segs[first]!.count <= c0) first++;
    const groups = chunkGroups(segs, first, c0, c1, xmin, xmax);
    for (const gr of groups) {
      if ('all' in gr) {
        scoresInto(gr.all, false);
        continue;
      }
      for (const pt of gr.packed) scoresInto(pt, false);
      for (const pt of gr.exact) scoresInto(pt, mixed);
      // Each row takes the exact score from its bound on.
      if (mixed) {
        const scores = scoresOf();
        const band = bandOf();
        for (const pt of gr.exact)
          eachRow((r, x) => {
            for (let t = Math.max(pt.u0, x); t < pt.u1; t++) scores[r + t] = band[r + t]!;
          });
      }
    }
    if (job.softcap) softcapRows(scoresOf(), rows, span, new Int32Array(buf, sc.lohi, rows * 2), job.softcap);
    softmaxChunk(sc.scores, rows, span, sc.lohi, mAddr, lAddr, accAddr, D);
    for (const gr of groups) {
      if ('all' in gr) {
        accumFrom(gr.all, false);
        continue;
      }
      if (mixed) {
        const scores = scoresOf();
        const band = bandOf();
        // Exact weights from each row's bound on, then packed ones below it: zero weights add nothing, so a
        // row's real adds are its packed positions, then its exact ones, in position order, as alone.
        for (const pt of gr.exact)
          eachRow((r, x) => {
            for (let t = pt.u0; t < pt.u1; t++) band[r + t] = t >= x ? scores[r + t]! : 0;
          });
        for (const pt of gr.packed)
          eachRow((r, x) => {
            for (let t = Math.max(pt.u0, x); t < pt.u1; t++) scores[r + t] = 0;
          });
      }
      for (const pt of gr.packed) accumFrom(pt, false);
      for (const pt of gr.exact) accumFrom(pt, mixed);
    }
  }
}

/** s -> cap * tanh(s / cap) on each row's visible range (gemma-style logit soft-capping). */
function softcapRows(scores: Float32Array, rows: number, span: number, lohi: Int32Array, cap: number): void {
  for (let r = 0; r < rows; r++) {
    for (let t = lohi[2 * r]!; t < lohi[2 * r + 1]!; t++) {
      const p = r * span + t;
      scores[p] = cap * Math.tanh(scores[p]! / cap);
    }
  }
}
