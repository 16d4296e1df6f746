// The study's memory table: every scheme's bytes at the model's shape and the study's context, from the
// accounting formula (the model protocols' bytes checks tie that formula to the cache's real bytes).
import { kvBytes } from '../../cache/accounting.js';
import { DEFAULT_SINKS, DEFAULT_WINDOW } from '../../cache/defaults.js';
import { schemePolicy, schemes } from '../../cache/schemes.js';
import type { ModelShape } from '../eval.js';

export interface MemoryRow {
  readonly scheme: string;
  readonly k: string;
  readonly v: string;
  /** Bulk bytes of one position (all layers, K + V), window 0. */
  readonly bytesPerPosition: number;
  /** Window 0, sinks 0: bulk, staging and total bytes at `ctx`, bits per element. */
  readonly bareBytes: number;
  readonly bareBits: number;
  /** Default window and sinks (cache/defaults.ts) at `ctx`. */
  readonly windowedBytes: number;
  readonly windowedBits: number;
}

export function memoryRows(shape: ModelShape, ctx: number): MemoryRow[] {
  return [...schemes.values()].map((s) => {
    const bare = kvBytes({ ctx, ...shape, policy: schemePolicy(s.name, { window: 0, sinks: 0 }) });
    const win = kvBytes({ ctx, ...shape, policy: schemePolicy(s.name, {}) });
    const one = kvBytes({ ctx: 4096, ...shape, policy: schemePolicy(s.name, { window: 0, sinks: 0 }) });
    return {
      scheme: s.name,
      k: s.k,
      v: s.v,
      bytesPerPosition: one.bulk / 4096,
      bareBytes: bare.total,
      bareBits: bare.bitsPerElement,
      windowedBytes: win.total,
      windowedBits: win.bitsPerElement,
    };
  });
}

export function memoryTable(rows: readonly MemoryRow[], shape: ModelShape, ctx: number): string[] {
  const kib = (b: number) => (b / 1024).toFixed(1);
  return [
    `Memory at this model's shape (${shape.layers} layers x ${shape.kvHeads} kv heads x ${shape.headDim}) and ${ctx} positions: bulk bytes per position (all layers, K + V; at 4096 positions, so part-filled groups do not count), and the whole cache at ${ctx} positions bare (window 0, sinks 0; f32 staging of part-filled per-channel groups included) and with the default window ${DEFAULT_WINDOW} + ${DEFAULT_SINKS} sinks.`,
    '',
    `| scheme | K | V | B/position (bulk) | KiB bare @${ctx} | bits bare | KiB window ${DEFAULT_WINDOW} @${ctx} | bits window ${DEFAULT_WINDOW} |`,
    '|---|---|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.scheme} | ${r.k} | ${r.v} | ${r.bytesPerPosition.toFixed(1)} | ${kib(r.bareBytes)} | ${r.bareBits.toFixed(2)} | ${kib(r.windowedBytes)} | ${r.windowedBits.toFixed(2)} |`,
    ),
  ];
}
