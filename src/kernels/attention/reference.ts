// Reference attention over a mixed cache view: the definition every fast kernel is tested against.
import { blockScratch } from '../../formats/format.js';
import { checkView, exactFromOf, readTile, tileSpan, type MixedView } from './view.js';
import { ShapeError, ArgumentError } from '../../errors.js';

export interface AttendArgs {
  readonly view: MixedView;
  /** [queries, heads, headDim] */
  readonly q: Float32Array;
  readonly heads: number;
  /** [queries, heads, headDim], written */
  readonly out: Float32Array;
  /** Absolute position of each query (causal: it sees positions <= its own). Default: all see the whole view. */
  readonly positions?: ArrayLike<number>;
  /** Score scale; default 1/sqrt(headDim). */
  readonly scale?: number;
  /** Sliding-window attention (e.g. gemma local layers): a query at p sees positions > p - slidingWindow. */
  readonly slidingWindow?: number;
  /** Logit soft-capping: s -> cap * tanh(s / cap). */
  readonly softcap?: number;
}

const TILE = 32;

/**
 * Decode (one query) and causal prefill (many queries) with GQA head mapping: head h reads kv head
 * floor(h / (heads / kvHeads)). Packed K/V are read tile by tile; softmax and sums run in float64.
 */
export function attendReference(args: AttendArgs): void {
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
  const scale = args.scale ?? 1 / Math.sqrt(D);
  const group = heads / view.kvHeads;
  const tile = new Float32Array(TILE * D);
  const scratch = blockScratch();
  const scores = new Float64Array(view.length);
  const acc = new Float64Array(D);

  for (let i = 0; i < nq; i++) {
    const pos = args.positions ? args.positions[i]! : view.length - 1;
    if (!(pos >= 0 && pos < view.length)) throw new ArgumentError(`attend: query position ${pos} outside [0, ${view.length})`);
    const lo = args.slidingWindow ? Math.max(0, pos - args.slidingWindow + 1) : 0;
    const hi = pos + 1; // exclusive
    const x = exactFromOf(view, pos);
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / group);
      const qo = (i * heads + h) * D;
      // Scores q.k for positions [lo, hi), segment by segment, tile by tile.
      let max = -Infinity;
      forEachTile(
        view,
        lo,
        hi,
        (seg, runT, p, n) => {
          readTile(seg.k, D, kvh, runT, n, tile, scratch);
          for (let t = 0; t < n; t++) {
            let s = 0;
            for (let c = 0; c < D; c++) s += q[qo + c]! * tile[t * D + c]!;
            s *= scale;
            if (args.softcap) s = args.softcap * Math.tanh(s / args.softcap);
            scores[p + t] = s;
            if (s > max) max = s;
          }
        },
        'k',
        x,
      );
      let sum = 0;
      for (let p = lo; p < hi; p++) {
        const e = Math.exp(scores[p]! - max);
        scores[p] = e;
        sum += e;
      }
      acc.fill(0);
      forEachTile(
        view,
        lo,
        hi,
        (seg, runT, p, n) => {
          readTile(seg.v, D, kvh, runT, n, tile, scratch);
          for (let t = 0; t < n; t++) {
            const w = scores[p + t]!;
            for (let c = 0; c < D; c++) acc[c] += w * tile[t * D + c]!;
          }
        },
        'v',
        x,
      );
      for (let c = 0; c < D; c++) out[qo + c] = acc[c]! / sum;
    }
  }
}

type Seg = MixedView['segments'][number];

/** Calls fn(segment, runToken, position, n) over [lo, hi) in tiles no run splits badly, as the query with bound x reads them. */
function forEachTile(view: MixedView, lo: number, hi: number, fn: (seg: Seg, runT: number, p: number, n: number) => void, which: 'k' | 'v', x: number): void {
  for (const seg of view.segments) {
    const run = seg[which];
    const a = Math.max(lo, seg.start, seg.read === 'exact' ? x : -Infinity);
    const b = Math.min(hi, seg.start + seg.count, seg.read === 'packed' ? x : Infinity);
    let p = a;
    while (p < b) {
      const runT = run.first + (p - seg.start);
      const n = tileSpan(run, runT, Math.min(TILE, b - p));
      fn(seg, runT, p, n);
      p += n;
    }
  }
}
