// The effective-bits caveat `eval` and `probe` print: only when a block format still pads rows after head
// packing (src/cache/head-packing.ts), never for the head dims packing covers.
import { paddedFormats } from '../cache/head-packing.js';
import { planLayers, type CachePolicy } from '../cache/policy.js';
import type { Model } from '../model/model.js';

/** A note only when some format's blocks still overhang a row after head packing (its bytes include padding). */
export function paddingNote(model: Model, policies: readonly CachePolicy[]): string | undefined {
  const { nLayer, nHeadKv, headDim } = model.hp;
  const ids = new Set(policies.flatMap((p) => planLayers(p, nLayer, model.hp.nCtxTrain).flatMap((plan) => paddedFormats(plan, nHeadKv, headDim))));
  if (ids.size === 0) return undefined;
  return `note: ${[...ids].join(', ')} blocks are longer than a row of ${nHeadKv} heads x ${headDim}: the bytes count the padding, so their effective bits exceed the format's.`;
}
