// What decode at depth could reach if attention ran at the machine's multiply-add peak: the physical limit
// the deep-context targets are weighed against (issue 24's q2k at 32K / 8K). A decode step at context c
// does layers x heads x c x headDim multiply-adds for K scores and as many for V sums; whatever the cache
// format, each is at least one f32 lane of an FMA for kernels that compute in f32 on the packed values (the
// benches leave the integer precisions, :int8 and :w16, out of it).
import { fmaPeakNow } from './compute-peak.js';
import { parseScheme } from './engine-long.js';

export interface AttentionShape {
  readonly layers: number;
  readonly heads: number;
  readonly headDim: number;
}

/** Multiply-adds of one decode step's attention over `context` positions (K scores + V sums). */
export function attentionMacs(s: AttentionShape, context: number): number {
  return 2 * s.layers * s.heads * context * s.headDim;
}

/** Decode tok/s of one engine at a shallow and a deep context, same run. */
export interface DepthPair {
  readonly base: { readonly context: number; readonly tps: number };
  readonly deep: { readonly context: number; readonly tps: number };
}

/** G multiply-adds per second an engine spent on the positions between base and deep (its step-time difference). */
export function attentionRate(s: AttentionShape, p: DepthPair): number | null {
  const dt = 1 / p.deep.tps - 1 / p.base.tps;
  const macs = attentionMacs(s, p.deep.context) - attentionMacs(s, p.base.context);
  return dt > 0 && macs > 0 ? macs / dt / 1e9 : null;
}

/**
 * The fastest decode at the deep context with the base step as measured plus the extra positions' attention
 * at `peak` G multiply-adds per second (no loads, no unpacking, no softmax: an upper bound).
 */
export function ceilingTps(s: AttentionShape, p: DepthPair, peak: number): number {
  const extra = attentionMacs(s, p.deep.context) - attentionMacs(s, p.base.context);
  return 1 / (1 / p.base.tps + extra / (peak * 1e9));
}

/** The FMA peaks measured now: 128-bit (WebAssembly SIMD's width) and 256-bit (native AVX2), on `threads` threads. */
export interface FmaPeaks {
  readonly threads: number;
  readonly w128: number;
  readonly w256: number;
}

export function measureFmaPeaks(threads: number): FmaPeaks | null {
  const w128 = fmaPeakNow(128, threads);
  const w256 = fmaPeakNow(256, threads);
  return w128 === null || w256 === null ? null : { threads, w128, w256 };
}

/** One deep row: kvpack's scheme against native's best there, and the issue's target multiple of native's best (null: none). */
export interface CeilingRow {
  readonly scheme: string;
  readonly kvpack: DepthPair;
  readonly native: DepthPair | null;
  readonly target: number | null;
}

/** Each deep row of kvpack's decode (f32 precisions) with the same scheme's shallowest row and native's best at both contexts. */
export function ceilingRows(
  kvpack: readonly { scheme: string; context: number; tps: number }[],
  native: readonly { context: number; tps: number }[],
  target: (scheme: string, context: number) => number | null,
): CeilingRow[] {
  const best = (c: number) => Math.max(0, ...native.filter((n) => n.context === c).map((n) => n.tps)) || null;
  const out: CeilingRow[] = [];
  // f32 kernels only: the integer precisions (:int8, :w16) do several multiply-adds per lane, the ceiling does not bind them.
  const f32 = (scheme: string) => !parseScheme(scheme).attention.q && !parseScheme(scheme).attention.v;
  for (const deep of kvpack.filter((x) => f32(x.scheme))) {
    const base = kvpack.filter((x) => x.scheme === deep.scheme && x.context < deep.context).sort((a, b) => a.context - b.context)[0];
    if (!base) continue;
    const nb = best(base.context);
    const nd = best(deep.context);
    out.push({
      scheme: deep.scheme,
      kvpack: { base: { context: base.context, tps: base.tps }, deep: { context: deep.context, tps: deep.tps } },
      native: nb && nd ? { base: { context: base.context, tps: nb }, deep: { context: deep.context, tps: nd } } : null,
      target: target(deep.scheme, deep.context),
    });
  }
  return out;
}

/** Lines that weigh each row's target against the f32 ceiling, with both engines' attention rates. */
export function ceilingLines(s: AttentionShape, peaks: FmaPeaks, rows: readonly CeilingRow[]): string[] {
  const g = (x: number) => x.toFixed(1);
  const share = (want: number, ceil: number) => (want > ceil ? 'above that ceiling' : `${((100 * want) / ceil).toFixed(0)}% of that ceiling`);
  const out = [
    `  attention ceiling (bench/native/fma-peak.c now, ${peaks.threads} threads: 128-bit FMA ${g(peaks.w128)} G multiply-adds/s, the widest WebAssembly SIMD issues; 256-bit ${g(peaks.w256)} G/s, native AVX2's)`,
  ];
  for (const r of rows) {
    const { base, deep } = r.kvpack;
    const extra = (attentionMacs(s, deep.context) - attentionMacs(s, base.context)) / 1e9;
    const ceil = ceilingTps(s, r.kvpack, peaks.w128);
    const ours = attentionRate(s, r.kvpack);
    const theirs = r.native ? attentionRate(s, r.native) : null;
    const want = r.native && r.target !== null ? r.target * r.native.deep.tps : null;
    const ceilNative = r.native ? ceilingTps(s, r.native, peaks.w128) : 0;
    out.push(
      `  ${r.scheme} at ${deep.context}: kvpack's ${base.context}-position step plus ${extra.toFixed(2)} G multiply-adds at the 128-bit peak = ${ceil.toFixed(2)} tok/s at most (measured ${deep.tps.toFixed(2)}; attention ${ours === null ? 'n/a' : `${g(ours)} G/s, ${((100 * ours) / peaks.w128).toFixed(0)}% of that peak`})` +
        (r.native
          ? `; native's best ${r.native.deep.tps.toFixed(2)} tok/s (attention ${theirs === null ? 'n/a' : `${g(theirs)} G/s, ${((100 * theirs) / peaks.w256).toFixed(0)}% of the 256-bit peak`})` +
            (want === null
              ? ''
              : `: the target ${r.target}x it is ${want.toFixed(2)} tok/s, ${share(want, ceil)}; with native's ${r.native.base.context}-position step as the rest of the step the ceiling is ${ceilNative.toFixed(2)} and the target ${share(want, ceilNative)}`)
          : ''),
    );
  }
  return out;
}
