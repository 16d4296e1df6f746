// Seed 000's equal-bytes arms at this model: K2c + V4 (q2k, the budget) and K4 + V2c cost the same per cell;
// no symmetric 2-bit pair in the registry does (q2 and the KIVI split cost less), so those arms fill the
// difference with an f16 window over the latest positions (KIVI's full-precision residual), sized from the
// accounting formula so the cache's real bytes at the end of a run of `positions` equal the budget's.
import { kvBytes } from '../../cache/accounting.js';
import type { ModelShape } from '../eval.js';

interface Split {
  readonly k: string;
  readonly v: string;
}

const total = (s: Split, window: number, shape: ModelShape, positions: number) =>
  kvBytes({ ctx: positions, ...shape, policy: { k: s.k, v: s.v, window, sinks: 0 } }).total;

/** The window (0..positions) that brings `arm`'s bytes nearest `budget`'s at `positions` (0 when none helps). */
export function fillWindow(arm: Split, budget: Split, shape: ModelShape, positions: number): number {
  const want = total(budget, 0, shape, positions);
  let best = 0;
  for (let w = 1; w <= positions; w++) {
    if (Math.abs(total(arm, w, shape, positions) - want) < Math.abs(total(arm, best, shape, positions) - want)) best = w;
  }
  return best;
}

/** Relative tolerance of the equal-bytes check: half of one f16 window position spread over the run (the
 * window's granularity), at least 0.1%. Exact (0 off) at a whole number of 32-position groups on the shared models. */
export function equalBytesTolerance(shape: ModelShape, positions: number): number {
  const budget = total({ k: 'q2c_0', v: 'q4_0' }, 0, shape, positions);
  const onePosition = shape.layers * shape.kvHeads * shape.headDim * 2 * 2;
  return Math.max(0.001, onePosition / 2 / budget);
}

/** The live-cache arms of a study: the natives, the two filled 2-bit pairs, every equal-bytes arm marked. */
export function studyLiveArms(shape: ModelShape, positions: number): Record<string, unknown>[] {
  const q2k = { k: 'q2c_0', v: 'q4_0' };
  const kivi = { k: 'int2c_g32', v: 'int2_g32' };
  const q2 = { k: 'q2c_0', v: 'q2c_0' };
  const wk = fillWindow(kivi, q2k, shape, positions);
  const wq = fillWindow(q2, q2k, shape, positions);
  return [
    { name: 'q4_0', k: 'q4_0', v: 'q4_0', note: 'reference: 4-bit both (576 B at seed 000 cell), not at the budget' },
    { name: 'q2k', ...q2k, note: "K 2-bit per-channel + V 4-bit per-token (seed 000's pick; 448 B): the budget", equalBytes: true },
    { name: 'k4-v2c', k: 'q4_0', v: 'q2c_0', note: "K 4-bit + V 2-bit per-channel: q2k's bytes, bits moved to K", equalBytes: true },
    {
      name: `kivi2+w${wk}`,
      ...kivi,
      window: wk,
      sinks: 0,
      note: 'KIVI split (K per-channel, V per-token, 2-bit) + f16 residual window to the budget',
      equalBytes: true,
    },
    { name: `q2+w${wq}`, ...q2, window: wq, sinks: 0, note: 'symmetric K2V2 per-channel + f16 window to the budget', equalBytes: true },
    { name: 'kivi2', ...kivi, note: 'KIVI split alone (below the budget)' },
    { name: 'q2', ...q2, note: 'symmetric K2V2 alone (below the budget)' },
  ];
}
