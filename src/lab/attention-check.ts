// Attention on the live cache, checked: the engine's last attention call per layer is recorded and compared
// with a float64 attention written here (independent of kernels/) over (a) the values the cache stores, read
// back (a cache destroyed at read time fails this, though its storage reads back fine), and (b) the appended
// K/V rounded to f16 (seed 000's "attention relative RMS vs FP16" on every layer of a real run).
// Also: which positions each exact region (sinks, anchors, window) covers, read back from the cache's view.
import { readStored } from '../kernels/attention/dequantize.js';
import type { MixedView, PackedRun } from '../kernels/attention/view.js';
import type { AttendOptions, KvCache } from '../cache/kvcache.js';
import { rowBytes } from '../formats/format.js';
import { roundFp16 } from '../numeric/half.js';
import { relRms } from './metrics.js';
import type { AppendRecorder } from './stored-error.js';

interface Call {
  q: Float32Array;
  out: Float32Array;
  positions: number[];
  scale: number;
  slidingWindow?: number;
  softcap?: number;
}

export interface LayerAttentionCheck {
  readonly layer: number;
  readonly queries: number;
  /** relRms(engine output, float64 attention over the stored values read back): ~1e-7 unless the read is wrong. */
  readonly readRelRms: number | null;
  /** relRms(engine output, float64 attention over the appended K/V rounded to f16): the scheme's error. */
  readonly vsF16RelRms: number;
}

export interface LayerPlacement {
  readonly layer: number;
  /** region -> [start, end) spans of positions, in order. */
  readonly regions: Record<string, [number, number][]>;
}

/** Records the last attend() call per layer of `cache` (and with `corrupt`, zeroes what each call reads). */
export class AttendTap {
  private readonly calls = new Map<number, Call>();
  constructor(
    readonly cache: KvCache,
    corrupt = false,
  ) {
    const orig = cache.attend.bind(cache);
    cache.attend = (layer: number, q: Float32Array, out: Float32Array, opts: AttendOptions = {}) => {
      const restore = corrupt ? zeroRead(cache.view(layer)) : undefined;
      try {
        const r = orig(layer, q, out, opts);
        const D = cache.headDim;
        this.calls.set(layer, {
          q: q.slice(),
          out: out.slice(),
          positions: opts.positions ? Array.from(opts.positions) : [cache.layerLength(layer) - 1],
          scale: opts.scale ?? 1 / Math.sqrt(D),
          slidingWindow: opts.slidingWindow,
          softcap: opts.softcap,
        });
        return r;
      } finally {
        restore?.();
      }
    };
  }

  /** Per layer: the last call against the stored values and against f16 of the appended ones. */
  check(rec: AppendRecorder, rotated: (layer: number) => boolean): LayerAttentionCheck[] {
    const c = this.cache;
    const out: LayerAttentionCheck[] = [];
    for (let l = 0; l < c.layers; l++) {
      const call = this.calls.get(l);
      if (!call) continue;
      const view = c.view(l);
      const f16 = (x: Float32Array) => x.map(roundFp16);
      const ref = (k: Float32Array, v: Float32Array) => attention64(call, k, v, c.kvHeads, c.headDim, view.start ?? 0);
      const stored = rotated(l) ? null : relRms(call.out, ref(readStored(view, 'k'), readStored(view, 'v')));
      out.push({
        layer: l,
        queries: call.positions.length,
        readRelRms: stored,
        vsF16RelRms: relRms(call.out, ref(f16(rec.rows(l, 'k')), f16(rec.rows(l, 'v')))),
      });
    }
    return out;
  }
}

/** Float64 causal attention of the recorded queries over K/V rows [positions, kvHeads*D] (GQA: head h reads kv head h / (heads / kvHeads)). */
export function attention64(call: Call, k: Float32Array, v: Float32Array, kvHeads: number, D: number, start: number): Float64Array {
  const nq = call.positions.length;
  const heads = call.q.length / (nq * D);
  const group = heads / kvHeads;
  const out = new Float64Array(call.q.length);
  for (let j = 0; j < nq; j++) {
    const p = call.positions[j]!;
    const lo = Math.max(start, call.slidingWindow ? p - call.slidingWindow + 1 : 0);
    for (let h = 0; h < heads; h++) {
      const kh = Math.floor(h / group);
      const qo = (j * heads + h) * D;
      const s = new Float64Array(p - lo + 1);
      let max = -Infinity;
      for (let t = lo; t <= p; t++) {
        let d = 0;
        for (let i = 0; i < D; i++) d += call.q[qo + i]! * k[(t * kvHeads + kh) * D + i]!;
        d *= call.scale;
        if (call.softcap) d = call.softcap * Math.tanh(d / call.softcap);
        s[t - lo] = d;
        max = Math.max(max, d);
      }
      let z = 0;
      for (let t = 0; t < s.length; t++) z += s[t] = Math.exp(s[t]! - max);
      for (let t = lo; t <= p; t++) {
        const w = s[t - lo]! / z;
        for (let i = 0; i < D; i++) out[qo + i]! += w * v[(t * kvHeads + kh) * D + i]!;
      }
    }
  }
  return out;
}

/** Byte spans a segment's run occupies (per head: token rows, or channel groups), for the corruption hook. */
function spans(run: PackedRun, D: number, heads: number, count: number): [number, number][] {
  const f = run.format;
  const out: [number, number][] = [];
  for (let h = 0; h < heads; h++) {
    const base = run.offset + h * run.headStride;
    if (f.axis === 'channel') {
      const g0 = Math.floor(run.first / f.blockValues),
        g1 = Math.floor((run.first + count - 1) / f.blockValues) + 1;
      out.push([base + g0 * D * f.blockBytes, base + g1 * D * f.blockBytes]);
    } else {
      const rb = rowBytes(f, D);
      out.push([base + run.first * rb, base + (run.first + count) * rb]);
    }
  }
  return out;
}

/** Test hook: zeroes every byte the view reads; returns the function that puts them back. */
function zeroRead(view: MixedView): () => void {
  const saved: { bytes: Uint8Array; at: number; copy: Uint8Array }[] = [];
  for (const s of view.segments) {
    for (const run of [s.k, s.v]) {
      for (const [a, b] of spans(run, view.headDim, view.kvHeads, s.count)) {
        saved.push({ bytes: run.bytes, at: a, copy: run.bytes.slice(a, b) });
      }
    }
  }
  for (const x of saved) x.bytes.fill(0, x.at, x.at + x.copy.length);
  return () => {
    for (const x of saved.reverse()) x.bytes.set(x.copy, x.at);
  };
}

/** Positions each region of the layer's view covers (adjacent segments of one region merged). */
export function placement(cache: KvCache): LayerPlacement[] {
  return Array.from({ length: cache.layers }, (_, l) => {
    const regions: Record<string, [number, number][]> = {};
    for (const s of cache.view(l).segments) {
      const r = (regions[s.region] ??= []);
      const last = r.at(-1);
      if (last && last[1] === s.start) last[1] = s.start + s.count;
      else r.push([s.start, s.start + s.count]);
    }
    return { layer: l, regions };
  });
}
