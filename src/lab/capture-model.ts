// Engine-side capture: runs a prompt through the model and keeps Q/K/V of chosen layers exactly as attention
// sees them (after QK-norm and RoPE), in the capture layout of capture.ts.
import { ArgumentError } from '../errors.js';
import type { CachePolicy } from '../cache/policy.js';
import { PREFILL_CHUNK } from '../model/generate.js';
import type { Model } from '../model/model.js';
import type { Capture, CapturedLayer } from './capture.js';

/** The capture runs over an exact cache so later layers see unquantized inputs. */
export const CAPTURE_POLICY: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32', window: 0, sinks: 0 };

/** Rows [n, heads, D] appended into [heads, total, D] at token offset t0. */
function scatterHeads(dst: Float32Array, src: Float32Array, n: number, heads: number, D: number, total: number, t0: number): void {
  for (let t = 0; t < n; t++) for (let h = 0; h < heads; h++) dst.set(src.subarray((t * heads + h) * D, (t * heads + h + 1) * D), (h * total + t0 + t) * D);
}

/** Q/K/V of `layers` over `tokens` (prefilled in chunks, like generate). */
export function captureModel(model: Model, tokens: readonly number[], layers: readonly number[], meta: Record<string, string | number> = {}): Capture {
  const hp = model.hp;
  if (tokens.length === 0) throw new ArgumentError('capture: no tokens');
  for (const l of layers) if (!Number.isInteger(l) || l < 0 || l >= hp.nLayer) throw new ArgumentError(`capture: layer ${l} outside [0, ${hp.nLayer})`);
  if (new Set(layers).size !== layers.length) throw new ArgumentError('capture: a layer is listed twice');
  const N = tokens.length;
  const D = hp.headDim;
  const out = new Map<number, { q: Float32Array; k: Float32Array; v: Float32Array }>();
  for (const l of layers)
    out.set(l, { q: new Float32Array(N * hp.nHead * D), k: new Float32Array(hp.nHeadKv * N * D), v: new Float32Array(hp.nHeadKv * N * D) });
  const cache = model.createCache({ policy: CAPTURE_POLICY, capacity: N });
  try {
    for (let t0 = 0; t0 < N; t0 += PREFILL_CHUNK) {
      const chunk = tokens.slice(t0, t0 + PREFILL_CHUNK);
      const n = chunk.length;
      model.forward(chunk, cache, {
        observe: (l, q, k, v) => {
          const o = out.get(l);
          if (!o) return;
          // q stays token-major [tokens, heads, D]; k and v go head-major [kvHeads, tokens, D].
          o.q.set(q.subarray(0, n * hp.nHead * D), t0 * hp.nHead * D);
          scatterHeads(o.k, k, n, hp.nHeadKv, D, N, t0);
          scatterHeads(o.v, v, n, hp.nHeadKv, D, N, t0);
        },
      });
    }
  } finally {
    cache.dispose();
  }
  const captured: CapturedLayer[] = layers.map((l) => ({ layer: l, tokens: N, heads: hp.nHead, kvHeads: hp.nHeadKv, headDim: D, ...out.get(l)! }));
  return { meta: { arch: hp.arch, tokens: N, ...meta }, layers: captured };
}
