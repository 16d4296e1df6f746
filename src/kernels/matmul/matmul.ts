// The wasm matmul path: weights live in the shared arena in their packed ggml bytes (read there straight from
// the file at load), activations are read where they live in the arena (or copied into an arena workspace)
// and laid out once per call (or once for a group of weights sharing the input), one token runs the fused
// one-token kernels, batches the tiled ones, and big calls split their output rows dynamically across the
// worker pool (units taken from a counter, assembly/matmul/run.ts; job.ts).
import { ArgumentError, ShapeError } from '../../errors.js';
import { inWasm, type WasmKernels } from '../runtime/wasm.js';
import { threadBudget } from '../runtime/threads.js';
import { matmulConfig, type Activations } from './config.js';
import { runJob, type Part } from './job.js';
import { layoutBytes, plan, type Layout, type Packed } from './plan.js';
import { workspace, type PackedWeight } from './weights.js';

/** y [n, rows] = x [n, cols] . W^T through the wasm kernels (same contract as Weight.matmul, no bias). */
export function wasmMatmul(w: PackedWeight, x: Float32Array, n: number, y: Float32Array, activations: Activations = matmulConfig().activations): void {
  wasmMatmulGroup([w], x, n, [y], activations);
}

/**
 * ys[i] [n, ws[i].rows] = x [n, cols] . ws[i]^T for weights that share their input (q/k/v, gate/up): x is
 * laid out (quantized, tiled) once for the whole group. Arrays that are views of arena memory are used in
 * place (wasmMatmulGroupAt); others are copied in (x) or out (ys) through the workspace.
 */
export function wasmMatmulGroup(
  group: readonly PackedWeight[],
  x: Float32Array,
  n: number,
  ys: readonly Float32Array[],
  activations: Activations = matmulConfig().activations,
): void {
  const cols = checkGroup(group, ys.length);
  if (x.length < n * cols || group.some((w, i) => ys[i]!.length < n * w.rows))
    throw new ShapeError(`wasmMatmulGroup: x ${x.length} or an output too short for ${n} tokens`);
  const first = group[0]!.space;
  if (group.every((w) => w.space === first)) return groupIn(first, group, x, n, ys, activations);
  // Weights in several spaces (a model past one memory): each space's share runs where its weights are.
  for (const k of new Set(group.map((w) => w.space))) {
    const mine = group.map((_w, i) => i).filter((i) => group[i]!.space === k);
    groupIn(
      k,
      mine.map((i) => group[i]!),
      x,
      n,
      mine.map((i) => ys[i]!),
      activations,
    );
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
  if (xIn && yIn.every(Boolean))
    return runGroup(
      k,
      group,
      x.byteOffset,
      n,
      ys.map((y) => y.byteOffset),
      activations,
    );
  const ws = workspace(k);
  // Outputs outside the space are staged one region per weight (the group runs as one job), copied out after;
  // a batch longer than the staging budget goes in slices of tokens.
  const outRows = group.map((w, i) => (yIn[i] ? 0 : w.rows));
  const perToken = ((xIn ? 0 : cols) + outRows.reduce((a, b) => a + b, 0)) * 4;
  const slice = Math.max(1, Math.min(n, Math.floor(stageBudget(k) / perToken)));
  const stage = outRows.map((r) => Math.ceil((slice * r * 4) / 64) * 64);
  const xPtr = xIn ? 0 : ws.get('x', slice * cols * 4);
  const yStage = stage.some(Boolean)
    ? ws.get(
        'y',
        stage.reduce((a, b) => a + b, 0),
      )
    : 0;
  const staged: number[] = [];
  for (let i = 0, off = yStage; i < group.length; off += stage[i]!, i++) staged.push(off);
  for (let t0 = 0; t0 < n; t0 += slice) {
    const m = Math.min(slice, n - t0);
    if (!xIn) new Float32Array(k.arena.memory.buffer, xPtr, m * cols).set(x.subarray(t0 * cols, (t0 + m) * cols));
    const xAt = xIn ? x.byteOffset + t0 * cols * 4 : xPtr;
    runGroup(
      k,
      group,
      xAt,
      m,
      group.map((w, i) => (yIn[i] ? ys[i]!.byteOffset + t0 * w.rows * 4 : staged[i]!)),
      activations,
    );
    group.forEach((w, i) => {
      if (!yIn[i]) ys[i]!.set(new Float32Array(k.arena.memory.buffer, staged[i]!, m * w.rows), t0 * w.rows);
    });
  }
}

/**
 * The same products with x [n, cols] already at arena address xPtr and each output ys[i] [n, rows_i] at
 * arena address yPtrs[i]: nothing is copied. An output may not overlap x (the f32 kernels read x as they write).
 */
export function wasmMatmulGroupAt(
  group: readonly PackedWeight[],
  xPtr: number,
  n: number,
  yPtrs: readonly number[],
  activations: Activations = matmulConfig().activations,
): void {
  checkGroup(group, yPtrs.length);
  const k = group[0]!.space;
  if (group.some((w) => w.space !== k)) throw new ArgumentError('wasmMatmulGroupAt: the weights live in different memory spaces (use wasmMatmulGroup)');
  runGroup(k, group, xPtr, n, yPtrs, activations);
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
  const maxThreads = threadBudget();
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
    else if (layout === 'tiles32b' || layout === 'tiles256b') {
      // The int16 quads staged after the bytes, then narrowed into them (layoutBytes).
      const staged = p.q + Math.ceil(n / 4) * cols * 4;
      e['packActQ8']!(xPtr, n, cols, layout === 'tiles32b' ? 32 : 256, staged, p.d, p.s);
      e['narrowActQ8']!(staged, n, cols, p.q);
    } else if (layout !== 'raw') e['packActVecN']!(xPtr, n, cols, Number(layout[3]), p.q, p.d, p.s);
  }
  // Weights per job: one part each, and one more for the last weight's final rows (runJob).
  const most = (e['matmulJobParts']!() as number) - 1;
  for (let i = 0; i < group.length; i += most) {
    const parts: Part[] = [];
    for (let j = i; j < Math.min(group.length, i + most); j++) parts.push({ w: group[j]!, p: plans[j]!, x: packed.get(plans[j]!.layout)!, y: yPtrs[j]! });
    runJob(k, parts, n, scratch, stride, maxThreads);
  }
}
