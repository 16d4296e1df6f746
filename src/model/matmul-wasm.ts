// The wasm matmul path: weights live in the shared arena in their packed ggml bytes (read there straight from
// the file at load), activations are read where they live in the arena (or copied into an arena workspace)
// and laid out once per call (or once for a group of weights sharing the input), one token runs the fused
// one-token kernels, batches the tiled ones, and big calls split their output rows dynamically across the
// worker pool (units taken from a counter, assembly/matmul_run.ts).
import { ArgumentError, OutOfMemoryError, ShapeError, WasmUnavailableError } from '../errors.js';
import { GGML } from '../gguf/types.js';
import { inWasm, wasmKernels, type WasmKernels } from '../kernels/wasm.js';
import { placeIn } from '../kernels/spaces.js';
import { awaitShared, beforePosts, postShared } from '../kernels/pool.js';
import { availableCores } from './threads.js';

/**
 * How activations enter the integer weight types: 'q8' quantizes them per block to int8 (per 32 values, per
 * 256 for K-quants, as llama.cpp's vec_dot_*_q8_0 / _q8_K do) and multiplies in integers; 'f32' keeps them
 * f32. Float weights (f32, f16, bf16) always use f32 activations.
 */
export type Activations = 'f32' | 'q8';

export interface MatmulConfig {
  activations: Activations;
  /** Threads including the caller's; capped at the cores available. */
  threads: number;
  /** 'measured': per size class, use the pool only while it is measured faster; 'always': every call of at least PARALLEL_MIN_MACS. */
  threadChoice: 'measured' | 'always';
}

/**
 * Default 'q8': bench/engine.ts measured it ~1.9x faster than 'f32' on q8_0 / q4_0 weights at decode, with
 * a relative output error of ~4e-3 (the bound is half an activation step per value; see matmul-wasm.test.ts).
 */
export const DEFAULT_ACTIVATIONS: Activations = 'q8';

/**
 * Calls below this many multiply-adds stay on one thread: a hand-off to a spinning worker costs a few us, to
 * a sleeping one ~40 us, about what 64K multiply-adds take (bench/engine.ts, dim 768 decode).
 */
export const PARALLEL_MIN_MACS = 1 << 17;
/** Re-time the option not in use once every this many calls of a size class (the machine's load changes). */
const PROBE_EVERY = 32;

/** Recent times per option a size class keeps: their median decides, so one stall does not (a slow wake-up). */
const CHOOSER_SAMPLES = 5;
/** Times of each option a size class has before the medians decide. */
const CHOOSER_MIN_SAMPLES = 3;
/** The pool's time per multiply-add under this fraction of one thread's counts as a clear win (2 threads: ~0.5 on a quiet machine). */
const CLEAR_WIN = 0.7;

/** One size class's recent times per multiply-add on one thread and on the pool. */
interface ClassTimes {
  one: number[];
  many: number[];
  calls: number;
  /** Whether the first (warm-up) time of each kind was dropped. */
  oneWarm: boolean;
  manyWarm: boolean;
}

/**
 * Picks one thread or the pool per size class (log2 of multiply-adds) from measured time per multiply-add:
 * on a machine where other processes hold the cores, a worker waits for a time slice and the pool loses
 * (bench/engine.ts saw +0.6 ms per call under load), so the choice is measured rather than fixed. Each
 * option keeps its last few times and the medians are compared: an average let one stalled call (a worker
 * descheduled for a time slice) send a size class to one thread for hundreds of calls.
 */
export class ThreadChooser {
  private readonly stats = new Map<number, ClassTimes>();
  private entry(macs: number): ClassTimes {
    const b = Math.round(Math.log2(macs));
    let s = this.stats.get(b);
    if (!s) this.stats.set(b, (s = { one: [], many: [], calls: 0, oneWarm: false, manyWarm: false }));
    return s;
  }
  /** Whether the last choose() picked the option that is not the best, to re-time it. */
  probing = false;
  choose(macs: number): boolean {
    const s = this.entry(macs);
    s.calls++;
    this.probing = false;
    // The pool until it has a few times, then one thread every fourth call until it has as many: a choice
    // made on one time each followed whichever call happened to stall.
    if (s.many.length < CHOOSER_MIN_SAMPLES) return true;
    if (s.one.length < CHOOSER_MIN_SAMPLES) return s.calls % 4 !== 0;
    const many = middle(s.many);
    const one = middle(s.one);
    // A probe of one thread costs a call at its speed, so a clear loser is re-timed less often. (Re-timing
    // the pool more often, every 8th call, sent decode to the pool under load and ran 0.6x: one worker
    // descheduled while it holds a unit makes the whole call wait.)
    const every = many < one && one > 1.5 * many ? 4 * PROBE_EVERY : PROBE_EVERY;
    this.probing = s.calls % every === 0;
    return this.probing ? !(many < one) : many < one;
  }
  /**
   * True when the pool's recent median time is well under one thread's (CLEAR_WIN): only then do its jobs
   * hold the workers awake and prefetch, whose cost (a spinning worker) no job time shows. Beside a busy
   * process a spinning worker takes a core's share from this thread's own single-threaded work.
   */
  clearlyFaster(macs: number): boolean {
    const s = this.entry(macs);
    return s.many.length >= CHOOSER_MIN_SAMPLES && s.one.length >= CHOOSER_MIN_SAMPLES && middle(s.many) < CLEAR_WIN * middle(s.one);
  }
  record(macs: number, parallel: boolean, ms: number): void {
    const s = this.entry(macs);
    const times = parallel ? s.many : s.one;
    // The first call of each kind includes warm-up (a pool start, tier-up): the second replaces it.
    if (times.length === 1 && !(parallel ? s.manyWarm : s.oneWarm)) {
      times.pop();
      if (parallel) s.manyWarm = true;
      else s.oneWarm = true;
    }
    times.push(ms / macs);
    if (times.length > CHOOSER_SAMPLES) times.shift();
  }
}

const sorted = new Float64Array(CHOOSER_SAMPLES);
/** The median of at most CHOOSER_SAMPLES numbers (no allocation: it runs on every call). */
function middle(xs: readonly number[]): number {
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i]!;
    let j = i;
    for (; j > 0 && sorted[j - 1]! > v; j--) sorted[j] = sorted[j - 1]!;
    sorted[j] = v;
  }
  return sorted[xs.length >> 1]!;
}
const chooser = new ThreadChooser();

/** Weight types the wasm kernels read in their packed bytes. */
const WASM_TYPES: ReadonlySet<number> = new Set([GGML.F32, GGML.F16, GGML.BF16, GGML.Q8_0, GGML.Q4_0, GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL, GGML.Q4_K, GGML.Q5_K, GGML.Q6_K]);
const FLOAT_TYPES: ReadonlySet<number> = new Set([GGML.F32, GGML.F16, GGML.BF16]);
const K_TYPES: ReadonlySet<number> = new Set([GGML.Q4_K, GGML.Q5_K, GGML.Q6_K]);
/** Kernel ids of assembly/matmul_run.ts. */
const KERNEL_IDS = { matmulVec: 0, matmulQ8Tiled: 3, matmulF32Tiled: 4 } as const;
type KernelName = keyof typeof KERNEL_IDS;
/** The job kernel that only reads weight rows into cache (matmulPrefetch). */
const K_TOUCH = 5;

let config: MatmulConfig = { activations: DEFAULT_ACTIVATIONS, threads: availableCores(), threadChoice: 'measured' };

export function configureMatmul(c: Partial<MatmulConfig>): void {
  if (c.activations !== undefined && c.activations !== 'f32' && c.activations !== 'q8') throw new ArgumentError(`activations must be 'f32' or 'q8', got '${c.activations}'`);
  if (c.threads !== undefined && (!Number.isInteger(c.threads) || c.threads < 1)) throw new ArgumentError(`threads must be a positive integer, got ${c.threads}`);
  config = { ...config, ...c };
}

export function matmulConfig(): Readonly<MatmulConfig> {
  return config;
}

/** A [rows, cols] weight whose packed bytes start at address `ptr` of memory space `space` (spaces.ts). */
export interface PackedWeight {
  readonly name: string;
  readonly space: WasmKernels;
  readonly type: number;
  readonly ptr: number;
  readonly rowBytes: number;
  readonly rows: number;
  readonly cols: number;
}

/** True when the wasm kernels can multiply this type (they are loaded and know it). */
export function wasmMatmulSupports(type: number): boolean {
  return WASM_TYPES.has(type) && wasmKernels() !== null;
}

/**
 * Reserves `bytes` for a weight in the first memory space with room (spaces.ts: several memories lift
 * wasm32's 4 GiB cap) and returns a view the loader fills in place (a file read lands there directly).
 */
export function allocWeight(name: string, bytes: number): { ptr: number; view: Uint8Array; space: WasmKernels } {
  kernels();
  let space: WasmKernels;
  try {
    space = placeIn(`tensor '${name}'`, bytes);
  } catch (e) {
    throw new OutOfMemoryError(`tensor '${name}' (${bytes} B) does not fit: ${(e as Error).message}`);
  }
  return { ...allocIn(space, name, bytes), space };
}

/** Reserves `bytes` of the primary space (activations, norm weights: where the forward ops read them in place). */
export function allocInArena(name: string, bytes: number): { ptr: number; view: Uint8Array } {
  return allocIn(kernels(), name, bytes);
}

function allocIn(k: WasmKernels, name: string, bytes: number): { ptr: number; view: Uint8Array } {
  let ptr: number;
  try {
    ptr = k.arena.alloc(bytes);
  } catch (e) {
    throw new OutOfMemoryError(`tensor '${name}' (${bytes} B) does not fit in memory space ${k.index} (${k.arena.allocated} B already used): ${(e as Error).message}`);
  }
  const view = new Uint8Array(k.arena.memory.buffer, ptr, bytes);
  // Registers this buffer object, so views made from it still count as arena memory after a grow.
  inWasm(k, view);
  return { ptr, view };
}

/** Returns bytes to the allocator of their space (default the primary one). */
export function freeInArena(ptr: number, space: WasmKernels = kernels()): void {
  space.arena.free(ptr);
}

/** Count of f16 Inf/NaN among `count` values at address ptr of `space`. */
export function arenaHalfNonFinite(ptr: number, count: number, space: WasmKernels = kernels()): number {
  return space.exports['halfNonFinite']!(ptr, count) as number;
}

/** Arena regions reused across calls, grown on demand (offsets stable; views re-created per call). */
class Workspace {
  private readonly k: WasmKernels;
  private readonly regions = new Map<string, { off: number; bytes: number }>();
  constructor(k: WasmKernels) {
    this.k = k;
  }
  get(key: string, bytes: number): number {
    const r = this.regions.get(key);
    if (r && r.bytes >= bytes) return r.off;
    if (r) this.k.arena.free(r.off);
    // Grow by half again so a slowly rising batch does not reallocate every call.
    const size = Math.max(bytes, r ? Math.ceil(r.bytes * 1.5) : 0);
    const off = this.k.arena.alloc(size);
    this.regions.set(key, { off, bytes: size });
    return off;
  }
}

/** One workspace per memory space: activations are laid out where the weights they meet live. */
const workspaces = new Map<WasmKernels, Workspace>();
function workspace(k: WasmKernels): Workspace {
  let w = workspaces.get(k);
  if (!w) workspaces.set(k, (w = new Workspace(k)));
  return w;
}

/**
 * Kept for bench labels (bench/engine.ts): from this many tokens the int8 (q8_0) and f16 calls leave the
 * one-token kernels for the tiled ones; every other size runs the tiles.
 */
export const TILE_MIN_TOKENS_Q8 = 4;
export const TILE_MIN_TOKENS_F32 = 2;

/**
 * Activation layouts a call may need; one weight group packs each at most once. vec*: one token in the order
 * a type's one-token kernel reads (assembly/matmul_vec.ts ORDER_*: int16 natural, q4_0 nibbles, q4_K nibbles; f32
 * for f16 / bf16, which the f32 tile reads too; int16 even/odd per 16 for q6_K); tiles*: token quads for the
 * int8 tile; raw: x as it is (the f32 tile of f32 and quantized weights).
 */
type Layout = 'raw' | 'tiles32' | 'tiles256' | 'vec0' | 'vec1' | 'vec2' | 'vec3' | 'vec4';

interface Plan {
  kernel: KernelName;
  layout: Layout;
}

/**
 * The one-token layout order for this weight and these activations, or -1: the type has a one-token kernel
 * (vecOrder: int8 orders only with 'q8' activations; f16 computes in f32 either way), and for the 32-value
 * block types (whose kernels convert block scales four at a time, Inf/NaN not kept) every scale is finite. The
 * scale check runs once per weight; a weight with a non-finite scale runs the exact tiled kernel at every size.
 */
const vecChecked = new WeakMap<PackedWeight, number>();
function vecOrder(e: WasmKernels['exports'], w: PackedWeight, activations: Activations): number {
  let order = vecChecked.get(w);
  if (order === undefined) {
    order = e['vecOrder']!(w.type) as number;
    if (order >= 0 && e['vecScalesFinite']!(w.type, w.ptr, w.rows * w.rowBytes) !== 1) order = -1;
    vecChecked.set(w, order);
  }
  return order < 0 || (activations !== 'q8' && !FLOAT_TYPES.has(w.type)) ? -1 : order;
}

/**
 * The kernel and layout for n tokens. Every kernel of a type sums each output in the same order
 * (assembly/matmul_tile*.ts), so the choice by n changes speed, never bits.
 */
function plan(e: WasmKernels['exports'], w: PackedWeight, n: number, activations: Activations): Plan {
  const type = w.type;
  const order = n <= (e['vecMaxTokens']!(type) as number) ? vecOrder(e, w, activations) : -1;
  if (order >= 0) return { kernel: 'matmulVec', layout: `vec${order as 0 | 1 | 2 | 3 | 4}` };
  // f16 / bf16: x in the one-token kernel's even/odd order, which the f32 tile's decoded rows follow.
  if (type === GGML.F16 || type === GGML.BF16) return { kernel: 'matmulF32Tiled', layout: 'vec3' };
  if (activations === 'q8' && !FLOAT_TYPES.has(type)) return { kernel: 'matmulQ8Tiled', layout: K_TYPES.has(type) ? 'tiles256' : 'tiles32' };
  return { kernel: 'matmulF32Tiled', layout: 'raw' };
}

/** The kernel a call of n tokens runs for this weight (tests prove the fast paths ran). */
export function matmulKernelFor(w: PackedWeight, n: number, activations: Activations = config.activations): KernelName {
  return plan(w.space.exports, w, n, activations).kernel;
}

/** Arena addresses of one packed activation layout: q (int or f32 values), d (scales), s (sums). */
interface Packed {
  q: number;
  d: number;
  s: number;
}

/** Bytes of [q, d, s] for a layout of n tokens x cols. */
function layoutBytes(layout: Layout, n: number, cols: number): [number, number, number] {
  const ng = Math.ceil(cols / 16);
  const nq = Math.ceil(n / 4);
  switch (layout) {
    case 'raw': return [0, 0, 0];
    case 'tiles32': case 'tiles256': return [nq * cols * 8, nq * ng * 16, nq * ng * 16];
    case 'vec0': case 'vec1': case 'vec2': return [n * cols * 2, n * Math.ceil(cols / 32) * 4, n * Math.ceil(cols / 32) * 2];
    case 'vec3': return [n * cols * 4, 0, 0];
    case 'vec4': return [n * cols * 2, n * Math.ceil(cols / 256) * 4, n * Math.ceil(cols / 16) * 2];
  }
}

/** y [n, rows] = x [n, cols] . W^T through the wasm kernels (same contract as Weight.matmul, no bias). */
export function wasmMatmul(w: PackedWeight, x: Float32Array, n: number, y: Float32Array, activations: Activations = config.activations): void {
  wasmMatmulGroup([w], x, n, [y], activations);
}

/**
 * ys[i] [n, ws[i].rows] = x [n, cols] . ws[i]^T for weights that share their input (q/k/v, gate/up): x is
 * laid out (quantized, tiled) once for the whole group. Arrays that are views of arena memory are used in
 * place (wasmMatmulGroupAt); others are copied in (x) or out (ys) through the workspace.
 */
export function wasmMatmulGroup(group: readonly PackedWeight[], x: Float32Array, n: number, ys: readonly Float32Array[], activations: Activations = config.activations): void {
  const cols = checkGroup(group, ys.length);
  if (x.length < n * cols || group.some((w, i) => ys[i]!.length < n * w.rows)) throw new ShapeError(`wasmMatmulGroup: x ${x.length} or an output too short for ${n} tokens`);
  const first = group[0]!.space;
  if (group.every((w) => w.space === first)) return groupIn(first, group, x, n, ys, activations);
  // Weights in several spaces (a model past one memory): each space's share runs where its weights are.
  for (const k of new Set(group.map((w) => w.space))) {
    const mine = group.map((w, i) => i).filter((i) => group[i]!.space === k);
    groupIn(k, mine.map((i) => group[i]!), x, n, mine.map((i) => ys[i]!), activations);
  }
}

/**
 * Bytes of x and y staging one call may take in a weight's space (its room is what placement left free):
 * a longer batch runs in slices of tokens, each a complete product of its rows.
 */
function stageBudget(k: WasmKernels): number {
  return Math.min(64 << 20, k.arena.limit / 16);
}

/** The group, all in space k: arrays that are views of k's memory are used in place, others copied in/out. */
function groupIn(k: WasmKernels, group: readonly PackedWeight[], x: Float32Array, n: number, ys: readonly Float32Array[], activations: Activations): void {
  const cols = group[0]!.cols;
  const xIn = inWasm(k, x);
  const yIn = ys.map((y) => inWasm(k, y));
  if (xIn && yIn.every(Boolean)) return runGroup(k, group, x.byteOffset, n, ys.map((y) => y.byteOffset), activations);
  const ws = workspace(k);
  // Outputs outside the space are staged one region per weight (the group runs as one job), copied out after;
  // a batch longer than the staging budget goes in slices of tokens.
  const outRows = group.map((w, i) => (yIn[i] ? 0 : w.rows));
  const perToken = ((xIn ? 0 : cols) + outRows.reduce((a, b) => a + b, 0)) * 4;
  const slice = Math.max(1, Math.min(n, Math.floor(stageBudget(k) / perToken)));
  const stage = outRows.map((r) => Math.ceil((slice * r * 4) / 64) * 64);
  const xPtr = xIn ? 0 : ws.get('x', slice * cols * 4);
  const yStage = stage.some(Boolean) ? ws.get('y', stage.reduce((a, b) => a + b, 0)) : 0;
  const staged: number[] = [];
  for (let i = 0, off = yStage; i < group.length; off += stage[i]!, i++) staged.push(off);
  for (let t0 = 0; t0 < n; t0 += slice) {
    const m = Math.min(slice, n - t0);
    if (!xIn) new Float32Array(k.arena.memory.buffer, xPtr, m * cols).set(x.subarray(t0 * cols, (t0 + m) * cols));
    const xAt = xIn ? x.byteOffset + t0 * cols * 4 : xPtr;
    runGroup(k, group, xAt, m, group.map((w, i) => (yIn[i] ? ys[i]!.byteOffset + t0 * w.rows * 4 : staged[i]!)), activations);
    group.forEach((w, i) => {
      if (!yIn[i]) ys[i]!.set(new Float32Array(k.arena.memory.buffer, staged[i]!, m * w.rows), t0 * w.rows);
    });
  }
}

/**
 * The same products with x [n, cols] already at arena address xPtr and each output ys[i] [n, rows_i] at
 * arena address yPtrs[i]: nothing is copied. An output may not overlap x (the f32 kernels read x as they write).
 */
export function wasmMatmulGroupAt(group: readonly PackedWeight[], xPtr: number, n: number, yPtrs: readonly number[], activations: Activations = config.activations): void {
  checkGroup(group, yPtrs.length);
  const k = group[0]!.space;
  if (group.some((w) => w.space !== k)) throw new ArgumentError('wasmMatmulGroupAt: the weights live in different memory spaces (use wasmMatmulGroup)');
  runGroup(k, group, xPtr, n, yPtrs, activations);
}

/** The loaded kernels (callers chose this path because they are). */
function kernels(): WasmKernels {
  const k = wasmKernels();
  if (!k) throw new WasmUnavailableError('wasm kernels unavailable');
  return k;
}

/** The group's common cols; one output per weight. */
function checkGroup(group: readonly PackedWeight[], outputs: number): number {
  const cols = group[0]?.cols ?? 0;
  if (group.length !== outputs || group.some((w) => w.cols !== cols)) throw new ArgumentError('wasmMatmulGroup: one output per weight, all with the same cols');
  return cols;
}

/** Lays x (at xPtr) out once per layout the group needs, then runs the weights into yPtrs[i], as one job. */
function runGroup(k: WasmKernels, group: readonly PackedWeight[], xPtr: number, n: number, yPtrs: readonly number[], activations: Activations): void {
  const ws = workspace(k);
  const e = k.exports;
  const cols = group[0]!.cols;
  for (let i = 0; i < group.length; i++) {
    const y = yPtrs[i]!;
    if (y < xPtr + n * cols * 4 && xPtr < y + n * group[i]!.rows * 4) throw new ArgumentError(`matmul ${group[i]!.name}: the output overlaps the input`);
  }
  const plans = group.map((w) => plan(e, w, n, activations));
  const maxThreads = Math.min(config.threads, availableCores());
  // One scratch per thread, 64-byte aligned apart; the one-token kernels need none.
  const stride = plans.every((p) => p.kernel === 'matmulVec') ? 0 : Math.ceil((e['matmulTileScratchBytes']!(cols) as number) / 64) * 64;
  // Workspace regions only: the kernels take addresses, so a memory grow here stales no view.
  const scratch = stride ? ws.get('scratch', stride * maxThreads) : 0;
  const packed = new Map<Layout, Packed>();
  for (const { layout } of plans) {
    if (packed.has(layout)) continue;
    const [q, d, s] = layoutBytes(layout, n, cols);
    const p = { q: q ? ws.get(`${layout}:q`, q) : xPtr, d: d ? ws.get(`${layout}:d`, d) : 0, s: s ? ws.get(`${layout}:s`, s) : 0 };
    packed.set(layout, p);
    if (layout === 'tiles32' || layout === 'tiles256') e['packActQ8']!(xPtr, n, cols, layout === 'tiles32' ? 32 : 256, p.q, p.d, p.s);
    else if (layout !== 'raw') e['packActVecN']!(xPtr, n, cols, Number(layout[3]), p.q, p.d, p.s);
  }
  // Weights per job: one part each, and one more for the last weight's final rows (runJob).
  const most = (e['matmulJobParts']!() as number) - 1;
  for (let i = 0; i < group.length; i += most) {
    const parts: Part[] = [];
    for (let j = i; j < Math.min(group.length, i + most); j++) parts.push({ w: group[j]!, p: plans[j]!, x: packed.get(plans[j]!.layout)!, y: yPtrs[j]! });
    runJob(k, parts, n, scratch, stride, maxThreads);
  }
}

/** One weight of a job: its plan, its packed activations and its output address. */
interface Part {
  w: PackedWeight;
  p: Plan;
  x: Packed;
  y: number;
}

/** Units per thread a parallel call aims for, so a thread that starts late or stalls holds up at most a few. */
const UNITS_PER_THREAD = 8;
/** Smallest unit, in multiply-adds: taking a unit costs ~0.1 us (an atomic on a shared line), this ~2 us of work. */
const MIN_UNIT_MACS = 1 << 16;

/**
 * Totals over parallel calls: units run and how many of them the calling thread took (benchmarks report the
 * share); prefetches posted and the touch units the workers took of them before the next job.
 */
const splitStats = { calls: 0, units: 0, callerUnits: 0, prefetches: 0, prefetchUnits: 0 };
export function matmulSplitStats(): Readonly<typeof splitStats> {
  return { ...splitStats };
}

/** Per space, the shared job every thread takes units from (pool.ts postShared wants a fixed address). */
const jobs: number[] = [];
function jobOf(k: WasmKernels): number {
  return (jobs[k.index] ||= k.arena.alloc(k.exports['matmulJobBytes']!() as number));
}
let jobTag = 0;

/**
 * The parts' products into their outputs as one job, whose units (whole 4-row strips of one weight) are
 * split dynamically across the pool when that pays: the workers are woken and waited for once per job.
 */
function runJob(k: WasmKernels, parts: readonly Part[], n: number, scratch: number, stride: number, maxThreads: number): void {
  const e = k.exports;
  let macs = 0;
  for (const { w } of parts) macs += w.rows * w.cols * n;
  const threads = Math.min(maxThreads, Math.floor(macs / MIN_UNIT_MACS) || 1);
  const parallel = threads > 1 && macs >= PARALLEL_MIN_MACS && (config.threadChoice === 'always' || chooser.choose(macs));
  // Only a clear win holds the workers awake and prefetches; a re-timing of the pool (one thread winning: a
  // busy machine) does neither.
  const chosen = parallel && (config.threadChoice === 'always' || (!chooser.probing && chooser.clearlyFaster(macs)));
  // Units of at least MIN_UNIT_MACS, about UNITS_PER_THREAD per thread over the whole job.
  const unitMacs = Math.max(MIN_UNIT_MACS, macs / (threads * UNITS_PER_THREAD));
  const job = jobOf(k);
  endPrefetch();
  usingPool = chosen;
  jobTag = (jobTag + 1) >>> 0;
  const t0 = performance.now();
  let count = 0;
  const part = ({ w, p, x, y }: Part, r0: number, rows: number, unitRows: number) =>
    e['matmulPart']!(job, count++, KERNEL_IDS[p.kernel], w.type, w.ptr + r0 * w.rowBytes, w.rowBytes, rows, w.cols, x.q, x.d, x.s, n, y + r0 * 4, w.rows, unitRows, scratch, stride);
  parts.forEach((pt, i) => {
    const { rows, cols } = pt.w;
    // (The job's counter holds at most 0xffff units in all.)
    const unitRows = parallel ? Math.max(Math.ceil(unitMacs / (cols * n) / 4) * 4, Math.ceil((rows * (parts.length + 1)) / 0xfff0)) : rows;
    // The job's last rows, about a unit per thread, go in quarter units: the threads then finish within a
    // quarter unit of each other. (Splits on a multiple of 4 rows: every row keeps its place in its 4-row group.)
    const tail = parallel && i === parts.length - 1 ? Math.min(rows - (rows % 4), threads * unitRows) : 0;
    const split = tail ? rows - tail - ((rows - tail) % 4) : rows;
    if (split > 0) part(pt, 0, split, unitRows);
    if (split < rows) part(pt, split, rows - split, Math.max(4, Math.ceil(unitRows / 16) * 4));
  });
  const units = e['matmulArm']!(job, count, jobTag) as number;
  if (parallel) postShared(k, 'matmulRun', job, threads - 1, chosen);
  const mine = e['matmulRun']!(job, 0) as number;
  // Also when not posted: a worker still in its loop from an earlier job (a prefetch, a late wake) may
  // have taken a unit of this one, and must finish it before the activations and the job are rewritten.
  if (mine < units) awaitShared(k, e['matmulJobDone']!(job) as number, units);
  if (parallel) {
    splitStats.calls++;
    splitStats.units += units;
    splitStats.callerUnits += mine;
  }
  if (threads > 1 && macs >= PARALLEL_MIN_MACS) chooser.record(macs, parallel, performance.now() - t0);
}

/** Whether the last job ran on the pool by choice (a prefetch only pays while the pool is in use). */
let usingPool = false;
/** Units of a prefetch job the workers may still be taking (0: none posted since the last job), and its space. */
let prefetching = 0;
let prefetchSpace: WasmKernels | null = null;
/** Bytes of weight rows per prefetch unit: a cancel waits for at most one such unit (~5 us). */
const PREFETCH_UNIT_BYTES = 64 << 10;

/**
 * Has the pool's workers read `group`'s weight rows into cache, in order, while this thread does something
 * else (a decode step's attention, when the workers would only spin): the next job cancels whatever they
 * have not reached. Does nothing when the last job did not use the pool (one thread chosen: a busy machine).
 * Only the weights in the first one's memory space are read (a job addresses one space).
 */
export function matmulPrefetch(group: readonly PackedWeight[]): void {
  const k = group[0]?.space;
  if (!k || !usingPool || !jobs[k.index]) return;
  const job = jobs[k.index]!;
  const e = k.exports;
  endPrefetch();
  const mine = group.filter((w) => w.space === k);
  const most = Math.min(mine.length, e['matmulJobParts']!() as number);
  for (let i = 0; i < most; i++) {
    const w = mine[i]!;
    const unitRows = Math.max(1, Math.floor(PREFETCH_UNIT_BYTES / w.rowBytes));
    e['matmulPart']!(job, i, K_TOUCH, w.type, w.ptr, w.rowBytes, w.rows, w.cols, 0, 0, 0, 0, 0, 0, unitRows, 0, 0);
  }
  jobTag = (jobTag + 1) >>> 0;
  const units = e['matmulArm']!(job, most, jobTag) as number;
  const workers = Math.min(config.threads, availableCores()) - 1;
  prefetching = postShared(k, 'matmulRun', job, workers) > 0 ? units : 0;
  prefetchSpace = k;
  if (prefetching) splitStats.prefetches++;
  // No worker to take it (the pool did not start): nothing may be left armed.
  if (!prefetching) e['matmulCancel']!(job);
}

// The pool's own jobs (attention) stop a prefetch too, so the workers take them at once.
beforePosts(() => endPrefetch());

/** Stops a posted prefetch: no unit is taken after this, and the ones taken are waited for. */
function endPrefetch(): void {
  const k = prefetchSpace;
  if (!prefetching || !k) return;
  const e = k.exports;
  const job = jobs[k.index]!;
  const taken = e['matmulCancel']!(job) as number;
  awaitShared(k, e['matmulJobDone']!(job) as number, taken);
  splitStats.prefetchUnits += taken;
  prefetching = 0;
}

/**
 * Kept for callers that used to stop the matmul threads: they are now the process's one worker pool
 * (kernels/pool.ts), shared with attention, whose idle workers never keep the process alive.
 */
export function closeMatmulThreads(): void {}
