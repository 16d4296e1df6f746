// The attention scheduler as of 315f2e2 (before batch-invariant float order), main thread only: the baseline
// bench/attention-ab.ts times the current attend() against in one process. Generated from git; not product code.
/* eslint-disable */
import { getFormat } from '../../src/formats/registry.js';
import { KernelError } from '../../src/errors.js';
import { refKernel } from '../../src/kernels/attention/ref-ops.js';
import { tableRow, type Op } from '../../src/kernels/attention/table.js';
import type { Abi } from '../../src/kernels/attention/abi.js';
import type { AccumulateKernel, ScoresKernel } from '../../src/kernels/attention/registry.js';
import { TILE_BYTES } from '../../src/kernels/runtime/wasm.js';

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

export interface SegPlan {
  readonly start: number;
  readonly count: number;
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
  /** Position splits per (kv head, query chunk): > 1 only when threads share one head's sequence. */
  readonly splits: number;
  /** Positions per scores chunk (the online-softmax step). */
  readonly chunk: number;
  /** Scaled q, [kvHeads, nq, G, D] f32. */
  readonly q: number;
  /** Integer q ([kvHeads, nq, G, D] i16) and its block scales ([.., D/32] f32); 0 = f32 scores. */
  readonly qi: number;
  readonly qd: number;
  /** [nq, 2] i32: visible positions [lo, hi) of each query. */
  readonly lohi: number;
  readonly softcap: number;
  readonly segs: readonly SegPlan[];
  /** Partial results: unit u at part + u * slotBytes: acc [rows, D] f32 | m [rows] f32 | l [rows] f64. */
  readonly part: number;
  readonly slotBytes: number;
  readonly units: number;
}

/** Per-thread scratch: the kernels' decode tile, the scores chunk [rows, chunk] f32, lohi [rows, 2] i32. */
export interface UnitScratch {
  readonly tile: number;
  readonly scores: number;
  readonly lohi: number;
}

/** Scores scratch per thread (bytes); the chunk length is derived from it and the rows per unit. */
export const SCORES_BYTES = 1 << 20;
/** Largest rows-per-unit lohi scratch covers. */
export const MAX_UNIT_ROWS = 1024;
export const LOHI_BYTES = MAX_UNIT_ROWS * 8;

/** Scratch one thread needs for runUnit. */
export const THREAD_SCRATCH_BYTES = TILE_BYTES + SCORES_BYTES + LOHI_BYTES;

export function scratchAt(base: number): UnitScratch {
  return { tile: base, scores: base + TILE_BYTES, lohi: base + TILE_BYTES + SCORES_BYTES };
}

type Fn = (...a: number[]) => void;
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

/** Positions [a, b) unit u covers: its query chunk's visible span, split evenly on 32-token boundaries. */
export function unitSpan(job: AttendJob, lohi: Int32Array, qci: number, sp: number): [number, number] {
  const i0 = qci * job.qc;
  const n = Math.min(job.qc, job.nq - i0);
  let L0 = Infinity;
  let L1 = 0;
  for (let i = i0; i < i0 + n; i++) {
    L0 = Math.min(L0, lohi[2 * i]!);
    L1 = Math.max(L1, lohi[2 * i + 1]!);
  }
  if (job.splits === 1) return [L0, L1];
  const step = Math.ceil((L1 - L0) / job.splits / 32) * 32;
  const a = Math.min(L1, L0 + sp * step);
  return [a, sp === job.splits - 1 ? L1 : Math.min(L1, a + step)];
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
export interface BoundJob extends AttendJob {
  readonly segs: readonly { readonly start: number; readonly count: number; readonly k: BoundRun; readonly v: BoundRun }[];
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

/** Binds every run to its kernel, once per job (never per unit or block). */
export function bindSegs(segs: readonly SegPlan[], resolve: (key: string) => UnitKernel): BoundJob['segs'] {
  const bind = (r: RunPlan): BoundRun => ({ ...r, call: resolve(r.kernel) });
  return segs.map((s) => ({ start: s.start, count: s.count, k: bind(s.k), v: bind(s.v) }));
}

export function bindJob(job: AttendJob, resolve: (key: string) => UnitKernel): BoundJob {
  return { ...job, segs: bindSegs(job.segs, resolve) };
}

/** Runs unit u: fills its partial slot (acc, m, l) from nothing. */
export function runUnit(ex: Exports, memory: WebAssembly.Memory, job: BoundJob, u: number, sc: UnitScratch): void {
  const { D, G, qc, nq } = job;
  const buf = memory.buffer;
  const jl = new Int32Array(buf, job.lohi, nq * 2);
  const { h, qci, sp } = unitCoords(job, u);
  const i0 = qci * qc;
  const n = Math.min(qc, nq - i0);
  const rows = n * G;
  const [a, b] = unitSpan(job, jl, qci, sp);
  const slot = job.part + u * job.slotBytes;
  const accAddr = slot;
  const mAddr = slot + rows * D * 4;
  const lAddr = mAddr + Math.ceil((rows * 4) / 16) * 16;
  new Float32Array(buf, accAddr, rows * D).fill(0);
  new Float32Array(buf, mAddr, rows).fill(-Infinity);
  new Float64Array(buf, lAddr, rows).fill(0);
  if (a >= b) return;
  const qRowsOff = (h * nq + i0) * G * D;
  const qAddr = job.q + qRowsOff * 4;
  const qiAddr = job.qi + qRowsOff * 2;
  const qdAddr = job.qd + (qRowsOff / 32) * 4;
  const lohi = new Int32Array(buf, sc.lohi, rows * 2);
  const softmaxChunk = ex['softmaxChunk'] as Fn;
  const segs = job.segs;
  // Segments are in position order: skip those wholly before the unit, then walk them chunk by chunk.
  let first = 0;
  while (first < segs.length && segs[first]!.start + segs[first]!.count <= a) first++;
  for (let c0 = a; c0 < b; c0 += job.chunk) {
    const c1 = Math.min(b, c0 + job.chunk);
    const span = c1 - c0;
    for (let i = 0; i < n; i++) {
      const lo = Math.min(span, Math.max(0, jl[2 * (i0 + i)]! - c0));
      const hi = Math.min(span, Math.max(0, jl[2 * (i0 + i) + 1]! - c0));
      for (let g = 0; g < G; g++) {
        lohi[2 * (i * G + g)] = lo;
        lohi[2 * (i * G + g) + 1] = hi;
      }
    }
    while (first < segs.length && segs[first]!.start + segs[first]!.count <= c0) first++;
    // Scores for the chunk, segment by segment: each K block read once for all rows.
    for (let si = first; si < segs.length && segs[si]!.start < c1; si++) {
      const seg = segs[si]!;
      const s0 = Math.max(c0, seg.start);
      const s1 = Math.min(c1, seg.start + seg.count);
      if (s0 >= s1) continue;
      const k = seg.k;
      const t0 = k.first + (s0 - seg.start);
      const base = k.addr + h * k.headStride;
      const out = sc.scores + (s0 - c0) * 4;
      const call = k.call;
      if (call.abi === 'js') {
        (call.fn as ScoresKernel)(
          new Float32Array(buf, qAddr, rows * D),
          0,
          rows,
          D,
          new Uint8Array(buf),
          base,
          t0,
          s1 - s0,
          new Float32Array(buf, sc.scores, rows * span),
          s0 - c0,
          span,
        );
      } else if (call.abi === 'scores-channel') {
        (ex[call.name] as Fn)(qAddr, rows, D, base, t0, s1 - s0, out, span, sc.tile, k.table);
      } else if (call.abi === 'scores-int') {
        (ex[call.name] as Fn)(qiAddr, qdAddr, rows, D, base + t0 * k.rowBytes, s1 - s0, out, span);
      } else {
        (ex[call.name] as Fn)(qAddr, rows, D, base + t0 * k.rowBytes, s1 - s0, out, span, sc.tile);
      }
    }
    if (job.softcap) softcapRows(new Float32Array(buf, sc.scores, rows * span), rows, span, lohi, job.softcap);
    softmaxChunk(sc.scores, rows, span, sc.lohi, mAddr, lAddr, accAddr, D);
    for (let si = first; si < segs.length && segs[si]!.start < c1; si++) {
      const seg = segs[si]!;
      const s0 = Math.max(c0, seg.start);
      const s1 = Math.min(c1, seg.start + seg.count);
      if (s0 >= s1) continue;
      const v = seg.v;
      const t0 = v.first + (s0 - seg.start);
      const base = v.addr + h * v.headStride;
      const w = sc.scores + (s0 - c0) * 4;
      const call = v.call;
      if (call.abi === 'js') {
        (call.fn as AccumulateKernel)(
          new Float32Array(buf, sc.scores, rows * span),
          s0 - c0,
          span,
          rows,
          D,
          new Uint8Array(buf),
          base,
          t0,
          s1 - s0,
          new Float32Array(buf, accAddr, rows * D),
          0,
        );
      } else if (call.abi === 'accum-channel') {
        (ex[call.name] as Fn)(w, span, rows, D, base, t0, s1 - s0, accAddr, sc.tile, v.table);
      } else {
        (ex[call.name] as Fn)(w, span, rows, D, base + t0 * v.rowBytes, s1 - s0, accAddr, sc.tile);
      }
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

import type { AttendArgs } from '../../src/kernels/attention/reference.js';
import { checkView, type MixedView } from '../../src/kernels/attention/view.js';
import { ArgumentError, ShapeError } from '../../src/errors.js';
import { rowBytes } from '../../src/formats/format.js';
import { route, variantPrecisions, type Route } from '../../src/kernels/attention/registry.js';
import { inWasm, tableAddress, MAX_WASM_HEAD_DIM, type WasmKernels } from '../../src/kernels/runtime/wasm.js';
import type { PackedRun } from '../../src/kernels/attention/view.js';
import type { KvFormat } from '../../src/formats/format.js';

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
/** Longest scores chunk (positions): decode's [G, chunk] scores then stay in L2 between the three passes. */
const MAX_CHUNK = 4096;
/**
 * Score evaluations (queries x query heads x visible positions) from which a call uses the pool. Chosen by
 * `npm run bench` (bench/attention.ts probeThreshold: q4_0 decode, 32 heads, pool forced on, second core
 * idle): 8K evaluations (256 positions) ran 0.89x on 2 threads, 16K (512) 1.72x, 32K-128K 1.75-1.82x.
 */
export const PARALLEL_MIN_WORK = 1 << 14;
/** Bytes of partial results per batch of queries (bounds scratch for long prefills). */
const PART_BUDGET = 16 << 20;
/** Fewest positions one split of a head's sequence covers (a split costs a merge of D floats per row). */
const MIN_SPLIT = 1024;
/** Units (heads x query chunks x splits) per thread a parallel call aims for: finer balance, see splits. */
const UNITS_PER_THREAD = 8;

/** What an attend() call ran. */
export interface AttendReport {
  /** 'fast': the unit scheduler over arena memory with registry kernels; 'reference': attendReference. */
  readonly path: 'fast' | 'reference';
  /** Registry keys of the kernels that read K and V (`format:op:precision:impl`), each once. */
  readonly kernels: readonly string[];
  /** Threads the call could use (1 when a kernel exists on this thread only, or the call is small). */
  readonly threads: number;
}

/** True when every run is arena memory and the head dim suits the f32 kernels. */
export function fastPathApplies(k: WasmKernels, view: MixedView): boolean {
  const D = view.headDim;
  if (D % 16 !== 0 || D > MAX_WASM_HEAD_DIM) return false;
  for (const s of view.segments) if (!inWasm(k, s.k.bytes) || !inWasm(k, s.v.bytes)) return false;
  return true;
}

/** The same argument checks as attendReference, with the same errors. */
function validate(args: AttendArgs): { nq: number; group: number } {
  const { view, q, heads, out } = args;
  const D = view.headDim;
  checkView(view);
  if (heads <= 0 || heads % view.kvHeads !== 0) {
    throw new ShapeError(`attend: ${heads} query heads is not a multiple of ${view.kvHeads} kv heads`);
  }
  if (q.length % (heads * D) !== 0) throw new ShapeError(`attend: q length ${q.length} is not queries x ${heads} x ${D}`);
  const nq = q.length / (heads * D);
  if (out.length !== q.length) throw new ShapeError(`attend: out length ${out.length} != q length ${q.length}`);
  if (args.positions && args.positions.length !== nq) throw new ShapeError(`attend: ${args.positions.length} positions for ${nq} queries`);
  if (view.length === 0) throw new ArgumentError('attend: the cache is empty');
  for (let i = 0; i < nq; i++) {
    const pos = args.positions ? args.positions[i]! : view.length - 1;
    if (!(pos >= 0 && pos < view.length)) throw new ArgumentError(`attend: query position ${pos} outside [0, ${view.length})`);
  }
  return { nq, group: heads / view.kvHeads };
}

/** Per space, scratch laid out [main thread's unit scratch | q | qi | qd | lohi | partials]; grown on demand. */
const scratches = new Map<WasmKernels, { off: number; bytes: number }>();

function ensureScratch(k: WasmKernels, bytes: number): number {
  const scratch = scratches.get(k);
  if (scratch && scratch.bytes >= bytes) return scratch.off;
  if (scratch) k.arena.free(scratch.off);
  // Room to grow into, within what a small space (spaces.ts) can spare.
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

export function attendOld(k: WasmKernels, args: FastAttendArgs): AttendReport {
  const { view, heads } = args;
  const { nq, group: G } = validate(args);
  const D = view.headDim;
  const L = view.length;
  const H = view.kvHeads;
  const scale = args.scale ?? 1 / Math.sqrt(D);
  const qp = args.qPrecision ?? 'f32';
  const vp = args.vPrecision ?? 'f32';
  const lohiJs = new Int32Array(nq * 2);
  let work = 0;
  for (let i = 0; i < nq; i++) {
    const pos = args.positions ? args.positions[i]! : L - 1;
    lohiJs[2 * i] = args.slidingWindow ? Math.max(0, pos - args.slidingWindow + 1) : 0;
    lohiJs[2 * i + 1] = pos + 1;
    work += (lohiJs[2 * i + 1]! - lohiJs[2 * i]!) * heads;
  }
  const qc = Math.max(1, Math.min(nq, Math.floor(MAX_ROWS / G)));
  const rows = qc * G;
  if (rows > MAX_UNIT_ROWS) throw new ShapeError(`attend: ${G} query heads per kv head exceeds ${MAX_UNIT_ROWS}`);
  const nQC = Math.ceil(nq / qc);
  // Routes are resolved once per format (registry.ts); a segment pays a lookup.
  const used: Route[] = [];
  const routeOf = (f: KvFormat, op: 'scores' | 'accumulate') => {
    const r = routeRun(f, op, op === 'scores' ? qp : vp, D, rows);
    if (!used.includes(r)) used.push(r);
    return r;
  };
  const segs = view.segments.map((s) => ({
    start: s.start,
    count: s.count,
    k: runPlan(k, s.k, D, routeOf(s.k.format, 'scores')),
    v: runPlan(k, s.v, D, routeOf(s.v.format, 'accumulate')),
  }));
  // Kernels given to registerKernel live on this thread only.
  const local = used.some((r) => r.custom);
  const nThreads = !local && work >= (args.minParallelWork ?? PARALLEL_MIN_WORK) ? 1 : 1;
  // Split a head's positions until there are UNITS_PER_THREAD units per thread: threads take units as they
  // finish, so a core that runs slower (a busy or throttled vCPU) takes fewer instead of setting the pace.
  const splits = nThreads > 1 ? Math.max(1, Math.min(Math.ceil((UNITS_PER_THREAD * nThreads) / (H * nQC)), Math.floor(L / MIN_SPLIT))) : 1;
  const chunk = Math.max(32, Math.min(MAX_CHUNK, Math.floor(SCORES_BYTES / (rows * 4 * 32)) * 32));
  const slot = align(slotBytes(rows, D));
  // Queries per batch: whole query chunks whose partial results fit PART_BUDGET (long prefills run in batches).
  const nb = qc * Math.max(1, Math.floor((args.partBudget ?? PART_BUDGET) / (H * splits * slot)));
  const bq = Math.min(nb, nq);
  const qRows = H * bq * G;
  const qB = align(qRows * D * 4);
  const qiB = qp === 'f32' ? 0 : align(qRows * D * 2);
  const qdB = qp === 'f32' ? 0 : align(qRows * (D / 32) * 4);
  const lohiB = align(bq * 8);
  const off = ensureScratch(k, THREAD_SCRATCH_BYTES + qB + qiB + qdB + lohiB + H * Math.ceil(bq / qc) * splits * slot);
  const qOff = off + THREAD_SCRATCH_BYTES;
  const qiOff = qOff + qB;
  const qdOff = qiOff + qiB;
  const lohiOff = qdOff + qdB;
  const partOff = lohiOff + lohiB;
  // Integer kernels take q rows quantized here once per call.
  const useInt = used.some((r) => r.row?.abi === 'scores-int');
  for (let b0 = 0; b0 < nq; b0 += bq) {
    const n = Math.min(bq, nq - b0);
    // Scaled q of queries [b0, b0+n), reordered [nq, heads, D] -> [kvHeads, n, G, D]: a unit's rows are contiguous.
    let buf = k.arena.memory.buffer;
    const qs = new Float32Array(buf, qOff, H * n * G * D);
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < n; i++) {
        for (let g = 0; g < G; g++) {
          const src = ((b0 + i) * heads + h * G + g) * D;
          const dst = ((h * n + i) * G + g) * D;
          for (let c = 0; c < D; c++) qs[dst + c] = args.q[src + c]! * scale;
        }
      }
    }
    new Int32Array(buf, lohiOff, n * 2).set(lohiJs.subarray(2 * b0, 2 * (b0 + n)));
    if (useInt) k.exports.quantizeRows(qOff, H * n * G, D, Q_MAX[qp as Exclude<QPrecision, 'f32'>], qiOff, qdOff);
    const job: BoundJob = {
      D,
      G,
      kvHeads: H,
      nq: n,
      qc,
      splits,
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
    const bound = bindJob(job, (key) => unitKernel(key, k.exports as Exports));
    for (let u = 0; u < job.units; u++) runUnit(k.exports as Exports, k.arena.memory, bound, u, scratchAt(off));
    buf = k.arena.memory.buffer;
    mergeUnits(job, buf, heads, args.out, b0);
  }
  return { path: 'fast', kernels: used.map((r) => r.key), threads: nThreads };
}

/**
 * out = sum_u acc_u * e^(m_u - M) / sum_u l_u * e^(m_u - M) over the splits u of each (kv head, query chunk)
 * (one split: acc / l). Rows map back to out[firstQuery + query, h*G + g, :].
 */
function mergeUnits(job: AttendJob, buf: ArrayBufferLike, heads: number, out: Float32Array, firstQuery: number): void {
  const { D, G, qc, nq, splits } = job;
  for (let u0 = 0; u0 < job.units; u0 += splits) {
    const { h, qci } = unitCoords(job, u0);
    const i0 = qci * qc;
    const n = Math.min(qc, nq - i0);
    const rows = n * G;
    const mOff = rows * D * 4;
    const lOff = mOff + Math.ceil((rows * 4) / 16) * 16;
    const parts = Array.from({ length: splits }, (_, sp) => {
      const slot = job.part + (u0 + sp) * job.slotBytes;
      return { acc: new Float32Array(buf, slot, rows * D), m: new Float32Array(buf, slot + mOff, rows), l: new Float64Array(buf, slot + lOff, rows) };
    });
    for (let i = 0; i < n; i++) {
      for (let g = 0; g < G; g++) {
        const r = i * G + g;
        const o = ((firstQuery + i0 + i) * heads + h * G + g) * D;
        if (splits === 1) {
          const p = parts[0]!;
          const inv = 1 / p.l[r]!;
          for (let c = 0; c < D; c++) out[o + c] = p.acc[r * D + c]! * inv;
          continue;
        }
        let M = -Infinity;
        for (const p of parts) if (p.l[r]! > 0) M = Math.max(M, p.m[r]!);
        let sum = 0;
        for (let c = 0; c < D; c++) out[o + c] = 0;
        for (const p of parts) {
          if (!(p.l[r]! > 0)) continue;
          const w = Math.exp(p.m[r]! - M);
          sum += p.l[r]! * w;
          for (let c = 0; c < D; c++) out[o + c] += p.acc[r * D + c]! * w;
        }
        const inv = 1 / sum;
        for (let c = 0; c < D; c++) out[o + c] *= inv;
      }
    }
  }
}
