// attend(): the entry point the cache and engine call. Over a view whose runs live in arena memory it runs
// the fast path (registry kernels, wasm where registered); anything else goes to attendReference.
import { attendReference, checkAttendArgs, type AttendArgs } from './reference.js';
import { exactFromOf, type MixedView } from './view.js';
import { ShapeError } from '../../errors.js';
import { rowBytes } from '../../formats/format.js';
import { route, variantPrecisions, type Route } from './registry.js';
import { inWasm, tableAddress, wasmKernels, MAX_WASM_HEAD_DIM, type WasmKernels } from '../runtime/wasm.js';
import {
  CHUNK_POSITIONS,
  SPLIT_POSITIONS,
  READ_ALL,
  READ_EXACT,
  READ_PACKED,
  THREAD_SCRATCH_BYTES,
  scratchAt,
  slotBytes,
  unitCoords,
  MAX_UNIT_ROWS,
  type AttendJob,
  type BoundJob,
  type BoundRun,
} from './attend-unit.js';
import { getThreads, runJob } from '../runtime/pool.js';
import { poolLatelyFaster } from '../runtime/pool-verdict.js';
import { ATTENTION_UNITS } from './unit-jobs.js';
import { spaceOf } from '../runtime/spaces.js';
import type { PackedRun } from './view.js';
import type { KvFormat } from '../../formats/format.js';

export type { AttendArgs };

/**
 * How q meets K in the score dots. 'f32' (default): float32 dots on exactly the dequantized K values.
 * 'int8' (llama.cpp's choice) / 'int16': q quantized per 32-value block, integer dots against q4_0/q8_0
 * K blocks; faster, and an accuracy choice whose error the gate records under its own tolerance.
 */
export type QPrecision = 'f32' | 'int8' | 'int16';
/**
 * How softmax weights meet packed V. 'f32' (default): float32 multiply-adds on the dequantized V values.
 * 'int16': weight x block scale rounded to 16 bits per 32 tokens, exact integer sums against q4_0/q8_0 V
 * levels (kernels `<format>_accum_w16`); an accuracy choice with its own gate tolerance.
 */
export type VPrecision = 'f32' | 'int16';
const Q_MAX: Record<Exclude<QPrecision, 'f32'>, number> = { int8: 127, int16: 32767 };

export interface FastAttendArgs extends AttendArgs {
  readonly qPrecision?: QPrecision;
  readonly vPrecision?: VPrecision;
  /** Thread budget for this call (default: pool.getThreads()); big calls only, see PARALLEL_MIN_WORK. */
  readonly threads?: number;
  /** Overrides PARALLEL_MIN_WORK for this call (benchmarks probing the threshold). */
  readonly minParallelWork?: number;
  /** Overrides PART_BUDGET, the scratch bytes for partial results per batch of queries (tests, tight memory). */
  readonly partBudget?: number;
}

/** Query rows (queries x heads of one GQA group) per unit: their q rows (64 x D f32) stay in L1. */
const MAX_ROWS = 64;
/**
 * Score evaluations (queries x query heads x visible positions) from which a call uses the pool. Chosen by
 * `npm run bench` (bench/attention.ts probeThreshold: q4_0 decode, 32 heads, pool forced on, second core
 * idle): 8K evaluations (256 positions) ran 0.89x on 2 threads, 16K (512) 1.72x, 32K-128K 1.75-1.82x.
 */
export const PARALLEL_MIN_WORK = 1 << 14;
/**
 * From this much work a call also uses the pool while the matmul jobs find it faster than one thread
 * (runtime/pool-verdict.ts: the other core is free). With the workers held, one call over 1K positions (12
 * query heads, 4 KV heads, head dim 64, q2k) took 158 against 272 us; 256 positions 70 against 82.
 */
export const FREE_POOL_MIN_WORK = 1 << 12;
/** Bytes of partial results per batch of queries (bounds scratch for long prefills). */
const PART_BUDGET = 16 << 20;

/** What an attend() call ran. */
export interface AttendReport {
  /** 'fast': the unit scheduler over arena memory with registry kernels; 'reference': attendReference. */
  readonly path: 'fast' | 'reference';
  /** Registry keys of the kernels that read K and V (`format:op:precision:impl`), each once. */
  readonly kernels: readonly string[];
  /** Threads the units were offered to: 1 when a kernel exists on this thread only, the call is small, or the pool ran it here (none, back-off). */
  readonly threads: number;
}

const REFERENCE_REPORT: AttendReport = Object.freeze({ path: 'reference', kernels: Object.freeze([]) as readonly string[], threads: 1 });

/**
 * Decode (one query) or causal prefill (many queries), GQA, same contract as attendReference.
 * Fast path numerics: q pre-scaled, dots and weighted sums in float32, online softmax numerators in
 * float32 with their sums in float64; the gate bounds the difference from the float64 reference (NMSE).
 * Synchronous: with threads, this thread takes units too and waits for the workers.
 */
export function attend(args: FastAttendArgs): AttendReport {
  // The kernels of the memory space the cache's runs live in (kernels/runtime/spaces.ts); q and out are copied in and out.
  const first = args.view.segments[0];
  const k = first ? spaceOf(first.k.bytes) : wasmKernels();
  if (!k || forceReference || !fastPathApplies(k, args.view)) {
    attendReference(args);
    return REFERENCE_REPORT;
  }
  return attendFast(k, args);
}

let forceReference = false;

/** Routes every attend() call to attendReference while on (the gate compares cache-level paths with it). */
export function setForceReference(on: boolean): void {
  forceReference = on;
}

/** True when every run is arena memory and the head dim suits the f32 kernels. */
export function fastPathApplies(k: WasmKernels, view: MixedView): boolean {
  const D = view.headDim;
  if (D % 16 !== 0 || D > MAX_WASM_HEAD_DIM) return false;
  for (const s of view.segments) if (!inWasm(k, s.k.bytes) || !inWasm(k, s.v.bytes)) return false;
  return true;
}

/** Per space, scratch laid out [main thread's unit scratch | q | qi | qd | lohi | partials]; grown on demand. */
const scratches = new Map<WasmKernels, { off: number; bytes: number }>();

function ensureScratch(k: WasmKernels, bytes: number): number {
  const scratch = scratches.get(k);
  if (scratch && scratch.bytes >= bytes) return scratch.off;
  if (scratch) k.arena.free(scratch.off);
  // Room to grow into, within what a small space (kernels/runtime/spaces.ts) can spare.
  const size = Math.max(bytes, Math.min(4 << 20, k.arena.limit / 16));
  const off = k.arena.alloc(size);
  scratches.set(k, { off, bytes: size });
  return off;
}

const align = (n: number) => Math.ceil(n / 64) * 64;

/** The integer q precisions the wasm kernels offer for this format's K (the gate checks each). */
export function integerQPrecisions(f: KvFormat): QPrecision[] {
  return variantPrecisions(f, 'scores') as QPrecision[];
}

/** True when the wasm kernels accumulate this format's V with 'int16' weights. */
export function hasIntegerV(f: KvFormat): boolean {
  return variantPrecisions(f, 'accumulate').includes('int16');
}

/** The kernel reading a run: the requested precision where a kernel computes at it, else f32. */
function routeRun(f: KvFormat, op: 'scores' | 'accumulate', precision: QPrecision | VPrecision, D: number, rows: number): Route {
  return (precision !== 'f32' ? route(f, op, precision, D, rows) : null) ?? route(f, op, 'f32', D, rows)!;
}

/** The run as job data, with the kernel the route bound for this thread. */
function runPlan(k: WasmKernels, run: PackedRun, D: number, r: Route): BoundRun {
  const f = run.format;
  return {
    format: f.id,
    kernel: r.key,
    addr: run.bytes.byteOffset + run.offset,
    headStride: run.headStride,
    first: run.first,
    rowBytes: f.axis === 'token' ? rowBytes(f, D) : 0,
    table: r.row ? tableAddress(k, r.row.table) : 0,
    call: r.unit,
  };
}

function attendFast(k: WasmKernels, args: FastAttendArgs): AttendReport {
  const { view, heads } = args;
  const { nq, group: G } = checkAttendArgs(args);
  const D = view.headDim;
  const L = view.length;
  const H = view.kvHeads;
  const scale = args.scale ?? 1 / Math.sqrt(D);
  const qp = args.qPrecision ?? 'f32';
  const vp = args.vPrecision ?? 'f32';
  // Per query: visible [lo, hi) and its exact-from bound (kernels/attention/view.ts).
  const lohiJs = new Int32Array(nq * 3);
  let work = 0;
  let minLo = Infinity;
  let maxHi = 0;
  for (let i = 0; i < nq; i++) {
    const pos = args.positions ? args.positions[i]! : L - 1;
    const lo = args.slidingWindow ? Math.max(0, pos - args.slidingWindow + 1) : 0;
    lohiJs[3 * i] = lo;
    lohiJs[3 * i + 1] = pos + 1;
    lohiJs[3 * i + 2] = exactFromOf(view, pos);
    work += (pos + 1 - lo) * heads;
    minLo = Math.min(minLo, lo);
    maxHi = Math.max(maxHi, pos + 1);
  }
  const qc = Math.max(1, Math.min(nq, Math.floor(MAX_ROWS / G)));
  const rows = qc * G;
  if (rows > MAX_UNIT_ROWS) throw new ShapeError(`attend: ${G} query heads per kv head exceeds ${MAX_UNIT_ROWS}`);
  // Routes are resolved once per format (registry.ts); a segment pays a lookup.
  const used: Route[] = [];
  const routeOf = (f: KvFormat, op: 'scores' | 'accumulate') => {
    const r = routeRun(f, op, op === 'scores' ? qp : vp, D, rows);
    if (!used.includes(r)) used.push(r);
    return r;
  };
  const read = (s: MixedView['segments'][number]) => (s.read === 'packed' ? READ_PACKED : s.read === 'exact' ? READ_EXACT : READ_ALL);
  const segs = view.segments.map((s) => ({
    start: s.start,
    count: s.count,
    read: read(s),
    k: runPlan(k, s.k, D, routeOf(s.k.format, 'scores')),
    v: runPlan(k, s.v, D, routeOf(s.v.format, 'accumulate')),
  }));
  // Kernels given to registerKernel live on this thread only.
  const local = used.some((r) => r.custom);
  const minWork = args.minParallelWork ?? (work >= FREE_POOL_MIN_WORK && poolLatelyFaster() ? FREE_POOL_MIN_WORK : PARALLEL_MIN_WORK);
  const nThreads = !local && work >= minWork ? Math.max(1, Math.min(args.threads ?? getThreads(), getThreads())) : 1;
  // A head's positions split at fixed SPLIT_POSITIONS boundaries whatever the thread count (the merge
  // order is the split order): threads take units as they finish, one thread runs the same units.
  const split0 = Math.floor(minLo / SPLIT_POSITIONS);
  const splits = Math.max(1, Math.ceil(maxHi / SPLIT_POSITIONS) - split0);
  const chunk = CHUNK_POSITIONS;
  const slot = align(slotBytes(rows, D));
  // Queries per batch: whole query chunks whose partial results fit PART_BUDGET (long prefills run in batches).
  const nb = qc * Math.max(1, Math.floor((args.partBudget ?? PART_BUDGET) / (H * splits * slot)));
  const bq = Math.min(nb, nq);
  const qRows = H * bq * G;
  const qB = align(qRows * D * 4);
  const qiB = qp === 'f32' ? 0 : align(qRows * D * 2);
  const qdB = qp === 'f32' ? 0 : align(qRows * (D / 32) * 4);
  const lohiB = align(bq * 12);
  const off = ensureScratch(k, THREAD_SCRATCH_BYTES + qB + qiB + qdB + lohiB + H * Math.ceil(bq / qc) * splits * slot);
  const qOff = off + THREAD_SCRATCH_BYTES;
  const qiOff = qOff + qB;
  const qdOff = qiOff + qiB;
  const lohiOff = qdOff + qdB;
  const partOff = lohiOff + lohiB;
  // Integer kernels take q rows quantized here once per call.
  const useInt = used.some((r) => r.row?.abi === 'scores-int');
  // Threads the units were offered to (runJob's word: 1 when it ran them here after all).
  let ran = 1;
  for (let b0 = 0; b0 < nq; b0 += bq) {
    const n = Math.min(bq, nq - b0);
    let buf = k.arena.memory.buffer;
    scaledQ(args.q, new Float32Array(buf, qOff, H * n * G * D), b0, n, H, G, D, heads, scale);
    new Int32Array(buf, lohiOff, n * 3).set(lohiJs.subarray(3 * b0, 3 * (b0 + n)));
    if (useInt) k.exports.quantizeRows(qOff, H * n * G, D, Q_MAX[qp as Exclude<QPrecision, 'f32'>], qiOff, qdOff);
    const job: BoundJob = {
      D,
      G,
      kvHeads: H,
      nq: n,
      qc,
      splits,
      split0,
      chunk,
      q: qOff,
      qi: useInt ? qiOff : 0,
      qd: useInt ? qdOff : 0,
      lohi: lohiOff,
      softcap: args.softcap ?? 0,
      segs,
      part: partOff,
      slotBytes: slot,
      units: H * Math.ceil(n / qc) * splits,
    };
    ran = Math.max(ran, runJob(k, ATTENTION_UNITS, job, scratchAt(off), nThreads));
    buf = k.arena.memory.buffer;
    mergeUnits(job, buf, heads, args.out, b0);
  }
  return { path: 'fast', kernels: used.map((r) => r.key), threads: ran };
}

/**
 * Scaled q of queries [b0, b0 + n), reordered [nq, heads, D] -> qs [kvHeads, n, G, D]: a unit's rows are
 * contiguous. A function of its own: inlined in attendFast the loop ran 5-7x slower (V8 11.3).
 */
function scaledQ(q: Float32Array, qs: Float32Array, b0: number, n: number, H: number, G: number, D: number, heads: number, scale: number): void {
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < n; i++) {
      for (let g = 0; g < G; g++) {
        const src = ((b0 + i) * heads + h * G + g) * D;
        const dst = ((h * n + i) * G + g) * D;
        for (let c = 0; c < D; c++) qs[dst + c] = q[src + c]! * scale;
      }
    }
  }
}

/**
 * out = sum_u acc_u * e^(m_u - M) / sum_u l_u * e^(m_u - M) over the splits u of each (kv head, query chunk)
 * (one split: acc / l). Rows map back to out[firstQuery + query, h*G + g, :].
 */
function mergeUnits(job: AttendJob, buf: ArrayBufferLike, heads: number, out: Float32Array, firstQuery: number): void {
  const { D, G, qc, nq, splits } = job;
  // Whole-buffer views indexed by address (slots are 64-byte aligned): no views per unit or split.
  const f32 = new Float32Array(buf);
  const f64 = new Float64Array(buf);
  for (let u0 = 0; u0 < job.units; u0 += splits) {
    const { h, qci } = unitCoords(job, u0);
    const i0 = qci * qc;
    const n = Math.min(qc, nq - i0);
    const rows = n * G;
    const mOff = rows * D * 4;
    const lOff = mOff + Math.ceil((rows * 4) / 16) * 16;
    const slot0 = job.part + u0 * job.slotBytes;
    for (let i = 0; i < n; i++) {
      for (let g = 0; g < G; g++) {
        const r = i * G + g;
        const o = ((firstQuery + i0 + i) * heads + h * G + g) * D;
        if (splits === 1) {
          const inv = 1 / f64[(slot0 + lOff) / 8 + r]!;
          const a = slot0 / 4 + r * D;
          for (let c = 0; c < D; c++) out[o + c] = f32[a + c]! * inv;
          continue;
        }
        let M = -Infinity;
        for (let sp = 0; sp < splits; sp++) {
          const slot = slot0 + sp * job.slotBytes;
          if (f64[(slot + lOff) / 8 + r]! > 0) M = Math.max(M, f32[(slot + mOff) / 4 + r]!);
        }
        let sum = 0;
        for (let c = 0; c < D; c++) out[o + c] = 0;
        for (let sp = 0; sp < splits; sp++) {
          const slot = slot0 + sp * job.slotBytes;
          const l = f64[(slot + lOff) / 8 + r]!;
          if (!(l > 0)) continue;
          const w = Math.exp(f32[(slot + mOff) / 4 + r]! - M);
          sum += l * w;
          const a = slot / 4 + r * D;
          for (let c = 0; c < D; c++) out[o + c] += f32[a + c]! * w;
        }
        const inv = 1 / sum;
        for (let c = 0; c < D; c++) out[o + c] *= inv;
      }
    }
  }
}
