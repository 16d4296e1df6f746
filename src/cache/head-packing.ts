// Head packing: when a token-axis block is longer than a head (head dims 8 and 16 against 32-value blocks),
// a layer stores g adjacent KV heads side by side as one head of g x headDim values, as ggml's rows run
// across heads. The row layout [kvHeads*headDim] is unchanged; attention stays exact per head because each
// query is placed in its own head's slot of the packed head with zeros elsewhere (see KvCache.attend).
import type { KvFormat } from '../formats/format.js';
import type { LayerPlan } from './policy.js';

/** How one layer stores its heads: `group` KV heads per stored head of `headDim` values. */
export interface HeadPacking {
  readonly group: number;
  readonly heads: number; // stored heads = kvHeads / group
  readonly headDim: number; // stored head size = group x model head dim
}

/** Every format a layer stores rows in (bulk, exact regions, anchors). */
function layerFormats(plan: LayerPlan): KvFormat[] {
  return [plan.k, plan.v, plan.exact.k, plan.exact.v, ...(plan.anchors ? [plan.anchors.k, plan.anchors.v] : [])];
}

/**
 * The smallest group of adjacent heads whose width is a whole number of blocks of every token-axis format
 * the layer uses; all heads in one stored head when none is (padding then falls once per row, not per head).
 * Layers whose blocks fit in a head keep one head per stored head.
 */
export function headPacking(plan: LayerPlan, kvHeads: number, headDim: number): HeadPacking {
  const blocks = layerFormats(plan)
    .filter((f) => f.axis === 'token' && f.blockValues > 1)
    .map((f) => f.blockValues);
  if (!blocks.some((b) => b > headDim)) return { group: 1, heads: kvHeads, headDim };
  let group = kvHeads;
  for (let g = 2; g < kvHeads; g++) {
    if (kvHeads % g === 0 && blocks.every((b) => (g * headDim) % b === 0)) {
      group = g;
      break;
    }
  }
  return { group, heads: kvHeads / group, headDim: group * headDim };
}

/** Token-axis formats of `plan` whose blocks still overhang the stored head (bytes then include padding). */
export function paddedFormats(plan: LayerPlan, kvHeads: number, headDim: number): string[] {
  const width = headPacking(plan, kvHeads, headDim).headDim;
  return [
    ...new Set(
      layerFormats(plan)
        .filter((f) => f.axis === 'token' && f.blockValues > 1 && width % f.blockValues !== 0)
        .map((f) => f.id),
    ),
  ];
}
