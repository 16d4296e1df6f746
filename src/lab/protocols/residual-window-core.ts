// residual-window (seed 003): the spec, the inputs, and the per-comparison computation shared by run and audit.
import { synthesize, attentionWeights, FOCI, type Focus } from '../synthetic.js';
import { relL2, massInWindow } from '../metrics.js';
import { attendDense } from '../dense.js';
import { readWindowCache, packWindowCache, windowCacheBytes, type WindowFormats } from '../window-cache.js';
import { attendReference } from '../../kernels/attention/reference.js';
import { decode } from '../../formats/codec.js';
import { obj, num, nums, str, strs, isPosInt, isNonNegInt } from '../spec.js';
import { FileFormatError } from '../../errors.js';

export interface ResidualWindowSpec {
  readonly name: 'residual-window';
  readonly distributions: readonly Focus[];
  readonly seeds: readonly number[];
  readonly lengths: readonly number[];
  readonly headDim: number;
  readonly windows: readonly number[];
  readonly formats: WindowFormats;
  readonly focusPositions: number;
  readonly focusLogit: number;
  /** Relative tolerance when the audit compares recomputed numbers with saved ones. */
  readonly tolerance: number;
  /** Negative controls: errors must exceed these wherever positions are quantized. */
  readonly controls: { readonly outputErrorFloor: number; readonly bulkErrorFloor: number };
  readonly timing: { readonly reps: number };
  /** Seed 003's byte figures, checked when `tokens` is among the lengths. */
  readonly expectedBytes?: { readonly tokens: number; readonly byWindow: Readonly<Record<string, number>>; readonly f32Full: number };
}

export function parseResidualWindow(json: unknown): ResidualWindowSpec {
  const o = obj(json, 'protocol');
  if (str(o, 'name') !== 'residual-window') throw new FileFormatError('protocol', `name must be residual-window`);
  const f = obj(o.formats, 'formats');
  const c = obj(o.controls, 'controls');
  const t = obj(o.timing, 'timing');
  const lengths = nums(o, 'lengths', isPosInt);
  const windows = nums(o, 'windows', isNonNegInt);
  if (windows.some((R) => lengths.some((N) => R > N))) throw new FileFormatError('protocol', 'every window must fit every length');
  let expectedBytes: ResidualWindowSpec['expectedBytes'];
  if (o.expectedBytes !== undefined) {
    const e = obj(o.expectedBytes, 'expectedBytes');
    const by = obj(e.byWindow, 'expectedBytes.byWindow');
    const byWindow: Record<string, number> = {};
    for (const k of Object.keys(by)) byWindow[k] = num(by, k, isPosInt);
    expectedBytes = { tokens: num(e, 'tokens', isPosInt), byWindow, f32Full: num(e, 'f32Full', isPosInt) };
  }
  return {
    name: 'residual-window',
    distributions: strs(o, 'distributions', FOCI),
    seeds: nums(o, 'seeds', isNonNegInt),
    lengths,
    headDim: num(o, 'headDim', isPosInt),
    windows,
    formats: { k: str(f, 'k'), v: str(f, 'v'), window: str(f, 'window') },
    focusPositions: num(o, 'focusPositions', isPosInt),
    focusLogit: num(o, 'focusLogit'),
    tolerance: num(o, 'tolerance', (x) => x >= 0),
    controls: { outputErrorFloor: num(c, 'outputErrorFloor', (x) => x >= 0), bulkErrorFloor: num(c, 'bulkErrorFloor', (x) => x >= 0) },
    timing: { reps: num(t, 'reps', isPosInt) },
    expectedBytes,
  };
}

export interface InputId {
  readonly id: string;
  readonly distribution: Focus;
  readonly seed: number;
  readonly tokens: number;
}

/** The inputs in frozen order: distributions x seeds x lengths. */
export function inputsOf(spec: ResidualWindowSpec): InputId[] {
  const out: InputId[] = [];
  for (const distribution of spec.distributions) {
    for (const seed of spec.seeds) {
      for (const tokens of spec.lengths) out.push({ id: `${distribution}_s${seed}_n${tokens}`, distribution, seed, tokens });
    }
  }
  return out;
}

export const inputPath = (x: InputId) => `inputs/${x.id}.f32`;
export const cachePath = (x: InputId, R: number) => `caches/${x.id}_r${R}.kvc`;

export interface InputArrays {
  /** [headDim] one decode query at position N-1 */
  readonly q: Float32Array;
  /** [N, headDim] */
  readonly k: Float32Array;
  readonly v: Float32Array;
}

/** Seed 003's synthetic input: no RoPE, outliers or sinks; only the focus bias on channel 0. */
export function makeInput(spec: ResidualWindowSpec, x: InputId): InputArrays {
  const s = synthesize({
    seed: x.seed,
    tokens: x.tokens,
    headDim: spec.headDim,
    focus: x.distribution,
    focusPositions: spec.focusPositions,
    focusLogit: spec.focusLogit,
  });
  return { q: s.q, k: s.k, v: s.v };
}

export interface Comparison {
  readonly input: string;
  readonly distribution: Focus;
  readonly seed: number;
  readonly tokens: number;
  readonly window: number;
  /** relL2 of the attention output vs float attention over the unquantized arrays. */
  readonly relL2: number;
  /** Reference attention probability on the last `window` positions. */
  readonly massInWindow: number;
  /** relL2 of the decoded bulk K and V vs the originals (0 when nothing is quantized). */
  readonly bulkKRelL2: number;
  readonly bulkVRelL2: number;
  readonly fileBytes: number;
  readonly formulaBytes: number;
  readonly f32FullBytes: number;
}

/** Float attention over the unquantized arrays: the reference output. */
export function referenceOutput(a: InputArrays, N: number, D: number): Float32Array {
  const out = new Float32Array(D);
  attendDense(a.q, a.k, a.v, N, D, out);
  return out;
}

/** Block-wise attention straight over the packed file (never decodes whole arrays). */
export function blockwiseOutput(formats: WindowFormats, cache: Uint8Array, q: Float32Array): Float32Array {
  const c = readWindowCache(formats, cache);
  const out = new Float32Array(c.headDim);
  attendReference({ view: c.view, q, heads: 1, out });
  return out;
}

/** Decodes every section to whole float arrays first, then dense attention (the path block-wise replaces). */
export function wholeDecodeOutput(formats: WindowFormats, cache: Uint8Array, q: Float32Array): Float32Array {
  const c = readWindowCache(formats, cache);
  const { bulkTokens: cut, windowTokens: R, headDim: D, sections: s } = c;
  const N = cut + R;
  const k = new Float32Array(N * D);
  const v = new Float32Array(N * D);
  if (cut > 0) {
    k.set(decode(formats.k, cache.subarray(...s.kBulk), cut * D, [cut, D]));
    v.set(decode(formats.v, cache.subarray(...s.vBulk), cut * D, [cut, D]));
  }
  if (R > 0) {
    k.set(decode(formats.window, cache.subarray(...s.kWindow), R * D, [R, D]), cut * D);
    v.set(decode(formats.window, cache.subarray(...s.vWindow), R * D, [R, D]), cut * D);
  }
  const out = new Float32Array(D);
  attendDense(q, k, v, N, D, out);
  return out;
}

/** Every number of one comparison, from the input arrays and the cache bytes as saved. */
export function compare(spec: ResidualWindowSpec, formats: WindowFormats, x: InputId, a: InputArrays, R: number, cache: Uint8Array): Comparison {
  const N = x.tokens,
    D = spec.headDim;
  const ref = referenceOutput(a, N, D);
  const got = blockwiseOutput(formats, cache, a.q);
  const c = readWindowCache(formats, cache);
  const cut = c.bulkTokens;
  const bulk = (fmt: string, sec: [number, number], orig: Float32Array) =>
    cut === 0 ? 0 : relL2(decode(fmt, cache.subarray(...sec), cut * D, [cut, D]), orig.subarray(0, cut * D));
  return {
    input: x.id,
    distribution: x.distribution,
    seed: x.seed,
    tokens: N,
    window: R,
    relL2: relL2(got, ref),
    massInWindow: massInWindow(attentionWeights(a.q, 0, a.k, 0, N, D), R),
    bulkKRelL2: bulk(formats.k, c.sections.kBulk, a.k),
    bulkVRelL2: bulk(formats.v, c.sections.vBulk, a.v),
    fileBytes: cache.length,
    formulaBytes: windowCacheBytes(spec.formats, N, R, D),
    f32FullBytes: 2 * N * D * 4,
  };
}

/** The f32 control: a cache with every position in the window must reproduce the reference exactly. */
export function f32ControlError(spec: ResidualWindowSpec, a: InputArrays, N: number): number {
  const all: WindowFormats = { k: spec.formats.window, v: spec.formats.window, window: spec.formats.window };
  const cache = packWindowCache(all, a.k, a.v, N, spec.headDim, N);
  return relL2(blockwiseOutput(all, cache, a.q), referenceOutput(a, N, spec.headDim));
}

export interface SummaryRow {
  readonly distribution: Focus;
  /** window -> mean relL2 over seeds x lengths */
  readonly relL2: Record<string, number>;
  /** window -> mean reference mass in the window */
  readonly massInWindow: Record<string, number>;
}

export interface BytesRow {
  readonly tokens: number;
  readonly window: number;
  readonly bytes: number;
  readonly f32FullBytes: number;
  readonly reduction: number;
}

export interface Summary {
  readonly byDistribution: SummaryRow[];
  readonly bytes: BytesRow[];
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** Averages per distribution and window (seeds x lengths, as seed 003's table) and the byte table. */
export function summarize(spec: ResidualWindowSpec, rows: readonly Comparison[]): Summary {
  const byDistribution = spec.distributions.map((distribution) => {
    const relL2: Record<string, number> = {};
    const mass: Record<string, number> = {};
    for (const R of spec.windows) {
      const sel = rows.filter((r) => r.distribution === distribution && r.window === R);
      relL2[R] = mean(sel.map((r) => r.relL2));
      mass[R] = mean(sel.map((r) => r.massInWindow));
    }
    return { distribution, relL2, massInWindow: mass };
  });
  const bytes: BytesRow[] = [];
  for (const tokens of spec.lengths) {
    for (const window of spec.windows) {
      const sel = rows.filter((r) => r.tokens === tokens && r.window === window);
      const b = sel[0]!.fileBytes;
      bytes.push({ tokens, window, bytes: b, f32FullBytes: sel[0]!.f32FullBytes, reduction: 1 - b / sel[0]!.f32FullBytes });
    }
  }
  return { byDistribution, bytes };
}

const pct = (x: number, d = 3) => `${(100 * x).toFixed(d)}%`;

/** Markdown headline tables (seed 003's layout). */
export function headline(spec: ResidualWindowSpec, s: Summary): string[] {
  const W = spec.windows;
  const nz = W.filter((R) => R > 0);
  const lines = [
    `| distribution | ${W.map((R) => `R=${R} relL2`).join(' | ')} | ${nz.map((R) => `ref mass in R=${R}`).join(' | ')} |`,
    `|---|${W.map(() => '---:').join('|')}|${nz.map(() => '---:').join('|')}|`,
    ...s.byDistribution.map(
      (r) => `| ${r.distribution} | ${W.map((R) => pct(r.relL2[R]!)).join(' | ')} | ${nz.map((R) => pct(r.massInWindow[R]!, 2)).join(' | ')} |`,
    ),
    '',
    '| N | R | file bytes | f32 full | reduction |',
    '|---:|---:|---:|---:|---:|',
    ...s.bytes.map(
      (b) => `| ${b.tokens} | ${b.window} | ${b.bytes.toLocaleString('en-US')} B | ${b.f32FullBytes.toLocaleString('en-US')} B | ${pct(b.reduction, 1)} |`,
    ),
  ];
  return lines;
}
