// The parity gate: every registered format x every kernel op against the reference. Encode and decode
// must be bit-exact; scores, weighted sums and attention outputs must sit within a named NMSE tolerance
// of the float64 reference. Prints one line per check and `N passed, M failed`.
// In src/ because the `kvpack web` page runs it (its "Check kernels"); `npm run gate` runs the full grid
// (test/parity/gate-cli.ts), test/parity/gate.test.ts a small one in every test run.
import { formats } from '../formats/registry.js';
import { bytesFor, rowBytes, type KvFormat } from '../formats/format.js';
import { attendReference, type AttendArgs } from '../kernels/attention/reference.js';
import type { MixedView } from '../kernels/attention/view.js';
import { attend, hasIntegerV, integerQPrecisions, setForceReference, type QPrecision, type VPrecision } from '../kernels/attention/attend.js';
import { KvCache } from '../cache/kvcache.js';
import { hasKernel, lookupKernel, registeredKernels, type Op, type Precision } from '../kernels/attention/registry.js';
import { KERNEL_TABLE, kernelKey } from '../kernels/attention/table.js';
import { abiFits } from '../kernels/attention/abi.js';
import { wasmKernels, wasmFailure } from '../kernels/runtime/wasm.js';
import { sharedArena } from '../kernels/runtime/arena.js';
import { Prng } from '../numeric/prng.js';
import { buildView, freeAll, type Allocations, type RunSpec, type SegmentSpec } from './build-view.js';

export interface GateGrid {
  readonly headDims: readonly number[];
  /** Head dims for one format when they differ from headDims. */
  readonly headDimsOf?: (f: KvFormat) => readonly number[];
  readonly lengths: readonly number[];
  /** Query heads per kv head. */
  readonly ratios: readonly number[];
  readonly kvHeads: number;
  /** Format ids to cover; default: every registered format. */
  readonly formats?: readonly string[];
}

/**
 * The npm-test grid: every format, one head dim, a partial group and a 257-token case (~5 s). Formats with
 * blocks longer than 64 values (int4_g128, int2_g128) also run at 128, the head dim where their wasm kernels
 * apply (at 64 the reference serves them, which the gate reports as n/a).
 */
export const SMALL_GRID: GateGrid = {
  headDims: [64],
  headDimsOf: (f) => (f.blockValues > 64 ? [64, 128] : [64]),
  lengths: [1, 33, 257],
  ratios: [3, 6],
  kvHeads: 2,
};
export const FULL_GRID: GateGrid = { headDims: [32, 64, 128, 256], lengths: [1, 2, 31, 32, 33, 255, 257, 4099], ratios: [1, 2, 3, 4, 7, 8], kvHeads: 2 };

/**
 * Named NMSE tolerances against the float64 reference. The default fast path computes on exactly the
 * dequantized values the reference uses, so only float32 rounding of dots, exp and sums separates them
 * (measured worst ~1e-12 on this grid; the bound leaves room for 4K-token sums).
 */
export const TOLERANCES = {
  'f32-accumulation': 1e-9,
  /**
   * qPrecision 'int16': q rounded to 16 bits per 32-value block (relative step 2^-15 of the block's largest
   * |q|) before integer dots; measured worst NMSE 5.1e-9 on the full grid (K with 6x outlier channels).
   */
  'int16-q': 2e-8,
  /**
   * qPrecision 'int8' (llama.cpp's q8 activations): relative step 1/127; measured worst NMSE 2.7e-4 over 8
   * heads, 2.2e-3 for a single head at 4099 positions (fewer heads average less of the rounding away).
   */
  'int8-q': 5e-3,
  /**
   * vPrecision 'int16': softmax weight x V block scale rounded to 16 bits per 32 tokens (relative step 2^-15
   * of the sub-block's largest weight) before exact integer sums: at most 32 / (12 * 32767^2) = 2.5e-9 per
   * block (assembly/attention/accum_w16.ts), x8 for headroom.
   */
  'int16-v': 2e-8,
} as const;
export type ToleranceName = keyof typeof TOLERANCES;

/** The tolerance a format's kernels are held to (one entry per family once numerics-changing paths exist). */
export function toleranceFor(_formatId: string): { name: ToleranceName; nmse: number } {
  return { name: 'f32-accumulation', nmse: TOLERANCES['f32-accumulation'] };
}

export interface GateResult {
  passed: number;
  failed: number;
  /** Checks skipped because the op has no wasm kernel for the format (not failures). */
  fallback: number;
  /** Checks where the format's wasm kernel does not serve the shape by design (its ABI), so the reference runs. */
  notApplicable: number;
  /** Registered wasm kernels (table rows of the grid's formats) that never ran on the grid: failures. */
  neverRan: string[];
  failures: string[];
}

/** sum (a-b)^2 / sum b^2 (0 when both are zero). */
export function nmse(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    const d = a[i]! - b[i]!;
    num += d * d;
    den += b[i]! * b[i]!;
  }
  return den === 0 ? (num === 0 ? 0 : Infinity) : num / den;
}

/** K-like values: normals with a few outlier channels (per-channel formats must absorb them). */
function kvValues(rng: Prng, kvHeads: number, tokens: number, D: number): Float32Array {
  const x = rng.normals(kvHeads * tokens * D);
  for (let i = 0; i < x.length; i++) if ((i % D) % 7 === 3) x[i] = x[i]! * 6;
  return x;
}

/**
 * Edge rows among the random ones (golden-vector style): zeros, a constant, exact rounding ties
 * (k + 0.5 next to 127 in every block, so q8_0's x/d lands exactly on .5), one outlier, and +-65504 (f16's largest).
 */
function edgeRows(x: Float32Array, L: number, D: number): void {
  for (let t = 1; t < L; t += 3) {
    const r = x.subarray(t * D, (t + 1) * D);
    switch (((t - 1) / 3) % 5) {
      case 0:
        r.fill(0);
        break;
      case 1:
        r.fill(0.37);
        break;
      case 2:
        for (let c = 0; c < D; c++) r[c] = c % 32 === 0 ? 127 : (c % 17) - 8 + 0.5;
        break;
      case 3:
        r[c0(D)] = 1000;
        break;
      case 4:
        for (let c = 0; c < D; c++) r[c] = c % 2 ? 65504 : -65504;
        break;
    }
  }
}
const c0 = (D: number) => Math.floor(D / 3);

interface Ctx {
  result: GateResult;
  log: (line: string) => void;
  /** Registry keys of the wasm kernels that actually ran. */
  ran: Set<string>;
}

function report(ctx: Ctx, ok: boolean, what: string, detail: string, worst = ''): void {
  if (ok) ctx.result.passed++;
  else {
    ctx.result.failed++;
    ctx.result.failures.push(`${what} ${detail} ${worst}`);
  }
  ctx.log(`${ok ? 'PASS' : 'FAIL'} ${what} ${detail}${ok || !worst ? '' : ` worst: ${worst}`}`);
}

function fallbackLine(ctx: Ctx, f: KvFormat, op: Op, where: string): void {
  ctx.result.fallback++;
  ctx.log(`REF  ${op} ${f.id} ${where}: ref fallback (no wasm kernel)`);
}

/**
 * The wasm kernel for an op-level check, or null (and a REF or N/A line) when the reference would serve it:
 * N/A when the table has the row but its ABI does not take this shape (e.g. int4_g128 at head dim 64).
 */
function wasmFor<O extends Op>(ctx: Ctx, f: KvFormat, op: O, D: number, rows: number, where: string) {
  if (!hasKernel(f.id, op, 'wasm')) {
    fallbackLine(ctx, f, op, where);
    return null;
  }
  const r = lookupKernel(f.id, op, 'wasm', { headDim: D, rows });
  if (r.impl !== 'wasm') {
    ctx.result.notApplicable++;
    ctx.log(`N/A  ${op} ${f.id} ${where}: the wasm kernel does not take this shape; the reference serves it`);
    return null;
  }
  ctx.ran.add(r.key);
  return r.fn;
}

/** Encode bit-exactness: the served encoder vs the reference encoder, head 0, all tokens. */
function checkEncode(ctx: Ctx, f: KvFormat, D: number, L: number, values: Float32Array): void {
  const where = `D=${D} L=${L}`;
  const fast = wasmFor(ctx, f, 'encode', D, 1, where);
  if (!fast) return;
  const B = f.blockValues;
  const tokens = f.axis === 'token' ? L : Math.ceil(L / B) * B;
  const src = new Float32Array(tokens * D);
  src.set(values.subarray(0, Math.min(L, tokens) * D));
  edgeRows(src, L, D);
  const bytes = bytesFor(f, tokens, D);
  const expect = new Uint8Array(bytes);
  const ref = lookupKernel(f.id, 'encode', 'ref').fn;
  const off = sharedArena().alloc(bytes);
  const groups = f.axis === 'token' ? [[0, tokens]] : Array.from({ length: tokens / B }, (_, g) => [g * B, B]);
  for (const [t, n] of groups) {
    const dOff = f.axis === 'token' ? 0 : (t! / B) * D * f.blockBytes;
    ref(src, t! * D, D, n!, D, expect, dOff);
    fast(src, t! * D, D, n!, D, sharedArena().u8(), off + dOff);
  }
  const got = sharedArena()
    .u8()
    .subarray(off, off + bytes);
  let first = -1;
  for (let i = 0; i < bytes; i++)
    if (got[i] !== expect[i]) {
      first = i;
      break;
    }
  sharedArena().free(off);
  const block = Math.floor(first / f.blockBytes);
  const at = f.axis === 'token' ? `token ${Math.floor(first / rowBytes(f, D))}` : `group ${Math.floor(block / D)} channel ${block % D}`;
  report(
    ctx,
    first < 0,
    `encode ${f.id}`,
    `${where} bit-exact [wasm]`,
    first < 0 ? '' : `block ${block} (${at}) byte ${first}: ${got[first]} != ${expect[first]}`,
  );
}

/** Op-level checks on head 0 of a view's first segment run: decode (bit-exact), scores and accumulate (NMSE). */
function checkOps(ctx: Ctx, f: KvFormat, D: number, L: number, G: number, view: MixedView): void {
  const where = `D=${D} L=${L} G=${G}`;
  const run = view.segments[0]!.k;
  const tol = toleranceFor(f.id);
  const ref = lookupKernel(f.id, 'decode', 'ref').fn;
  const exact = new Float32Array(L * D);
  ref(run.bytes, run.offset, run.first, L, D, exact, 0);
  const rng = new Prng(L * 131 + D);
  const allocs: Allocations = [];
  const a = sharedArena();
  const qOff = a.alloc(G * D * 4);
  const sOff = a.alloc(G * L * 4);
  const accOff = a.alloc(G * D * 4);
  const dOff = a.alloc(L * D * 4);
  allocs.push(qOff, sOff, accOff, dOff);
  const mem = a.u8();
  const buf = mem.buffer;
  const q = new Float32Array(buf, qOff, G * D);
  q.set(rng.normals(G * D));
  const s = new Float32Array(buf, sOff, G * L); // [G, L] scores, then weights
  const acc = new Float32Array(buf, accOff, G * D);
  const dec = new Float32Array(buf, dOff, L * D);
  const base = run.offset; // head 0; the view's bytes may be stale after the allocations above
  const runBytes = mem;

  const decode = wasmFor(ctx, f, 'decode', D, G, where);
  if (decode) {
    decode(runBytes, base, run.first, L, D, dec, 0);
    let bad = -1;
    for (let i = 0; i < L * D; i++)
      if (!Object.is(dec[i], exact[i])) {
        bad = i;
        break;
      }
    report(
      ctx,
      bad < 0,
      `decode ${f.id}`,
      `${where} bit-exact [wasm]`,
      bad < 0 ? '' : `token ${Math.floor(bad / D)} channel ${bad % D}: ${dec[bad]} != ${exact[bad]}`,
    );
  }

  const scores = wasmFor(ctx, f, 'scores', D, G, where);
  if (scores) {
    scores(q, 0, G, D, runBytes, base, run.first, L, s, 0, L);
    const want = new Float64Array(G * L);
    for (let g = 0; g < G; g++)
      for (let t = 0; t < L; t++) {
        let x = 0;
        for (let c = 0; c < D; c++) x += q[g * D + c]! * exact[t * D + c]!;
        want[g * L + t] = x;
      }
    const e = nmse(s, want);
    report(
      ctx,
      e <= tol.nmse,
      `scores ${f.id}`,
      `${where} nmse=${e.toExponential(2)} (tol ${tol.nmse} ${tol.name}) [wasm]`,
      worstRow(s, want, G, L, 'head', 'token'),
    );
  }

  const accumulate = wasmFor(ctx, f, 'accumulate', D, G, where);
  if (accumulate) {
    for (let i = 0; i < G * L; i++) s[i] = rng.next();
    acc.fill(0);
    accumulate(s, 0, L, G, D, runBytes, base, run.first, L, acc, 0);
    const want = new Float64Array(G * D);
    for (let g = 0; g < G; g++) for (let t = 0; t < L; t++) for (let c = 0; c < D; c++) want[g * D + c] += s[g * L + t]! * exact[t * D + c]!;
    const e = nmse(acc, want);
    report(
      ctx,
      e <= tol.nmse,
      `accumulate ${f.id}`,
      `${where} nmse=${e.toExponential(2)} (tol ${tol.nmse} ${tol.name}) [wasm]`,
      worstRow(acc, want, G, D, 'head', 'channel'),
    );
  }
  for (const off of allocs) a.free(off);
}

/** "row r (max |diff| x at col c)" for the row of [rows, cols] with the largest squared error. */
function worstRow(got: ArrayLike<number>, want: ArrayLike<number>, rows: number, cols: number, rowName: string, colName: string): string {
  let best = -1;
  let bestErr = -1;
  let col = 0;
  let colErr = 0;
  for (let r = 0; r < rows; r++) {
    let e = 0;
    let mc = 0;
    let me = 0;
    for (let c = 0; c < cols; c++) {
      const d = Math.abs(got[r * cols + c]! - want[r * cols + c]!);
      e += d * d;
      if (d > me) {
        me = d;
        mc = c;
      }
    }
    if (e > bestErr) {
      bestErr = e;
      best = r;
      col = mc;
      colErr = me;
    }
  }
  return `${rowName} ${best}: max |diff| ${colErr.toExponential(2)} at ${colName} ${col}`;
}

/**
 * Views for one case. Plain: one segment of the format. Exact: f16 sinks, bulk, an f32 anchor, bulk
 * (read from the same bulk run, starting mid-group), f16 window: the regions a cache policy makes.
 */
function viewSpecs(f: KvFormat, rng: Prng, kvHeads: number, D: number, L: number, exactRegions: boolean): { runs: RunSpec[]; segments: SegmentSpec[] } {
  const f16 = formats.get('f16')!;
  const f32 = formats.get('f32')!;
  const run = (format: KvFormat, tokens: number): RunSpec => ({ format, tokens, values: kvValues(rng, kvHeads, tokens, D) });
  if (!exactRegions) {
    return { runs: [run(f, L), run(f, L)], segments: [{ region: 'bulk', count: L, k: { run: 0, first: 0 }, v: { run: 1, first: 0 } }] };
  }
  const sinks = 2;
  const anchor = 1;
  const window = Math.min(16, Math.floor(L / 4));
  const bulk = L - sinks - anchor - window;
  const b1 = Math.ceil(bulk / 2);
  const lead = 5; // unused leading bulk tokens, so channel-axis segments begin mid-group
  const runs = [
    run(f16, sinks),
    run(f16, sinks),
    run(f, lead + bulk),
    run(f, lead + bulk),
    run(f32, anchor),
    run(f32, anchor),
    run(f16, window),
    run(f16, window),
  ];
  const segments: SegmentSpec[] = [
    { region: 'sinks', count: sinks, k: { run: 0, first: 0 }, v: { run: 1, first: 0 } },
    { region: 'bulk', count: b1, k: { run: 2, first: lead }, v: { run: 3, first: lead } },
    { region: 'anchors', count: anchor, k: { run: 4, first: 0 }, v: { run: 5, first: 0 } },
    { region: 'bulk', count: bulk - b1, k: { run: 2, first: lead + b1 }, v: { run: 3, first: lead + b1 } },
    { region: 'window', count: window, k: { run: 6, first: 0 }, v: { run: 7, first: 0 } },
  ].filter((s) => s.count > 0);
  return { runs, segments };
}

function checkAttend(
  ctx: Ctx,
  f: KvFormat,
  view: MixedView,
  ratio: number,
  label: string,
  rng: Prng,
  extra: Partial<AttendArgs> & { queries?: number; qPrecision?: QPrecision; vPrecision?: VPrecision } = {},
): void {
  const D = view.headDim;
  const heads = view.kvHeads * ratio;
  const nq = extra.queries ?? 1;
  const q = rng.normals(nq * heads * D, 1.5);
  const got = new Float32Array(q.length);
  const want = new Float32Array(q.length);
  const { qPrecision, vPrecision, ...rest } = extra;
  const args = { view, q, heads, ...rest };
  const ran = attend({ ...args, out: got, qPrecision, vPrecision });
  attendReference({ ...args, out: want });
  // The loosest of the format's own tolerance and those of the accuracy choices in play.
  const named = (name: keyof typeof TOLERANCES) => ({ name, nmse: TOLERANCES[name] });
  const tols = [
    toleranceFor(f.id),
    ...(qPrecision === 'int8' ? [named('int8-q')] : qPrecision === 'int16' ? [named('int16-q')] : []),
    ...(vPrecision === 'int16' ? [named('int16-v')] : []),
  ];
  const tol = tols.reduce((a, b) => (b.nmse > a.nmse ? b : a));
  const e = nmse(got, want);
  // Every kernel the view needs must be the wasm row wherever one is registered and takes the shape.
  const rows = Math.min(nq, Math.floor(64 / ratio) || 1) * ratio;
  const missing: string[] = [];
  const formatsInView = new Set(view.segments.flatMap((s) => [s.k.format, s.v.format]));
  for (const g of formatsInView) {
    for (const [op, p] of [
      ['scores', qPrecision ?? 'f32'],
      ['accumulate', vPrecision ?? 'f32'],
    ] as const) {
      const wanted = wasmRow(g, op, p, D, rows) ?? wasmRow(g, op, 'f32', D, rows);
      if (wanted && !ran.kernels.includes(wanted)) missing.push(wanted);
    }
  }
  for (const key of ran.kernels) if (key.endsWith(':wasm')) ctx.ran.add(key);
  const mine = ran.kernels.filter((key) => key.startsWith(`${f.id}:`));
  const route = ran.path === 'reference' ? 'reference path' : mine.every((key) => key.endsWith(':wasm')) ? 'wasm' : 'ref kernels';
  const ok = e <= tol.nmse && missing.length === 0 && (ran.path === 'fast' || !wasmKernels());
  report(
    ctx,
    ok,
    `attend ${f.id}`,
    `D=${D} L=${view.length} G=${ratio} ${label} nmse=${e.toExponential(2)} (tol ${tol.nmse} ${tol.name}) [${route}]`,
    missing.length ? `registered wasm kernels that did not run: ${missing.join(', ')}` : worstRow(got, want, nq * heads, D, '(query*heads+head)', 'channel'),
  );
}

/** The key of the loaded wasm row for format:op:precision if its ABI takes this shape. */
function wasmRow(f: KvFormat, op: Op, precision: Precision, D: number, rows: number): string | null {
  if (!hasKernel(f.id, op, 'wasm', precision)) return null;
  const key = kernelKey(f.id, op, precision, 'wasm');
  const row = KERNEL_TABLE.find((r) => kernelKey(r.format, r.op, r.precision, r.impl) === key)!;
  return abiFits(row.abi, f, D, rows) ? key : null;
}

/** Runs the grid; `log` receives one line per check. */
export function runGate(grid: GateGrid, log: (line: string) => void = console.log): GateResult {
  const ctx: Ctx = { result: { passed: 0, failed: 0, fallback: 0, notApplicable: 0, neverRan: [], failures: [] }, log, ran: new Set() };
  const k = wasmKernels();
  log(k ? 'wasm kernels: loaded' : `wasm kernels: unavailable (${wasmFailure()}); every op is ref fallback`);
  const ids = grid.formats ?? [...formats.keys()];
  for (const id of ids) {
    const f = formats.get(id)!;
    for (const D of grid.headDimsOf?.(f) ?? grid.headDims) {
      for (const L of grid.lengths) {
        const rng = new Prng(D * 10007 + L * 31 + id.length);
        checkEncode(ctx, f, D, L, kvValues(rng, 1, L, D));
        for (const exactRegions of L >= 8 ? [false, true] : [false]) {
          const allocs: Allocations = [];
          const spec = viewSpecs(f, rng, grid.kvHeads, D, L, exactRegions);
          const view = buildView(spec.runs, spec.segments, grid.kvHeads, D, allocs);
          const label = exactRegions ? 'sinks+anchor+window' : 'plain';
          // Every ratio: kernels take query rows four at a time and the 1-3 left over in their own pass.
          if (!exactRegions) for (const ratio of grid.ratios) checkOps(ctx, f, D, L, ratio, view);
          // Views made before checkOps' allocations may be stale; rebuild the bytes reference.
          const fresh = rebase(view);
          for (const ratio of grid.ratios) checkAttend(ctx, f, fresh, ratio, `${label} decode`, rng);
          // Integer-q score paths (named accuracy choices) where the format has them.
          for (const qp of integerQPrecisions(f))
            for (const ratio of grid.ratios) checkAttend(ctx, f, fresh, ratio, `${label} decode qPrecision=${qp}`, rng, { qPrecision: qp });
          if (hasIntegerV(f)) {
            for (const ratio of grid.ratios) checkAttend(ctx, f, fresh, ratio, `${label} decode vPrecision=int16`, rng, { vPrecision: 'int16' });
            checkAttend(ctx, f, fresh, Math.max(...grid.ratios), `${label} decode qPrecision=int8 vPrecision=int16`, rng, {
              qPrecision: 'int8',
              vPrecision: 'int16',
            });
          }
          if (L >= 4 && L <= 300) {
            const nq = Math.min(L, 6);
            const positions = Array.from({ length: nq }, (_, i) => L - nq + i);
            checkAttend(ctx, f, fresh, 4, `${label} prefill x${nq}`, rng, { queries: nq, positions });
            checkAttend(ctx, f, fresh, 2, `${label} prefill x${nq} window 3 softcap 30`, rng, { queries: nq, positions, slidingWindow: 3, softcap: 30 });
          }
          freeAll(allocs);
        }
      }
    }
  }
  for (const id of ids) {
    const f = formats.get(id)!;
    // Cache-level cases at <= 300 tokens: the forced-reference side is plain JS.
    for (const D of grid.headDimsOf?.(f) ?? grid.headDims)
      checkRotation(ctx, f, D, Math.min(300, Math.max(...grid.lengths)), Math.max(...grid.ratios), grid.kvHeads);
  }
  // Proof the grid exercised the fast path: every registered wasm kernel of these formats ran at least once.
  for (const key of registeredKernels()) {
    if (!key.endsWith(':wasm') || !ids.includes(key.split(':')[0]!) || ctx.ran.has(key)) continue;
    ctx.result.neverRan.push(key);
    report(ctx, false, `kernel ${key}`, 'is registered but never ran on this grid', 'add a case where its ABI applies');
  }
  log(`${ctx.result.passed} passed, ${ctx.result.failed} failed (${ctx.result.fallback} ref fallback, ${ctx.result.notApplicable} n/a by shape)`);
  return ctx.result;
}

/**
 * A KvCache with rotation on (K and V, f16 sinks and window around the bulk): cache.attend on the fast path
 * against the same call routed to attendReference (same rotated q and stored bytes), decode and prefill.
 */
function checkRotation(ctx: Ctx, f: KvFormat, D: number, L: number, ratio: number, kvHeads: number): void {
  const rng = new Prng(D * 7 + L + f.id.length);
  const cache = new KvCache({
    layers: 1,
    kvHeads,
    headDim: D,
    capacity: L,
    policy: { k: f.id, v: f.id, window: 16, sinks: 2, rotation: { k: true, v: true, seed: 3 } },
  });
  cache.append(0, kvValues(rng, 1, L, kvHeads * D), kvValues(rng, 1, L, kvHeads * D));
  const heads = kvHeads * ratio;
  for (const nq of [1, 4]) {
    const q = rng.normals(nq * heads * D, 1.5);
    const positions = nq === 1 ? undefined : Array.from({ length: nq }, (_, i) => L - nq + i);
    const got = new Float32Array(q.length);
    const want = new Float32Array(q.length);
    cache.attend(0, q, got, { positions });
    setForceReference(true);
    try {
      cache.attend(0, q, want, { positions });
    } finally {
      setForceReference(false);
    }
    const tol = toleranceFor(f.id);
    const e = nmse(got, want);
    report(
      ctx,
      e <= tol.nmse,
      `attend ${f.id}`,
      `D=${D} L=${L} G=${ratio} rotation k+v sinks+window ${nq === 1 ? 'decode' : `prefill x${nq}`} nmse=${e.toExponential(2)} (tol ${tol.nmse} ${tol.name}) [cache]`,
      worstRow(got, want, nq * heads, D, '(query*heads+head)', 'channel'),
    );
  }
}

/** The same view with every run's bytes re-made over the arena's current buffer. */
function rebase(view: MixedView): MixedView {
  const bytes = sharedArena().u8();
  return { ...view, segments: view.segments.map((s) => ({ ...s, k: { ...s.k, bytes }, v: { ...s.v, bytes } })) };
}
