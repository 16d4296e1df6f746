// `kvpack memory`: KV bytes per scheme at a context (seed 000's memory table), with overlay costs.
import type { Command } from 'commander';
import { schemes, schemePolicy } from '../cache/schemes.js';
import { kvBytes } from '../cache/accounting.js';
import { intArg, table } from './args.js';
import type { WindowMode } from '../cache/policy.js';

const GiB = 1024 ** 3;

interface MemoryOpts {
  ctx: number; layers: number; kvHeads: number; headDim: number;
  window: number; sinks: number; windowMode: WindowMode; json?: boolean;
}

export function memoryTable(o: MemoryOpts) {
  return [...schemes.values()].map((s) => {
    const b = kvBytes({
      ctx: o.ctx, layers: o.layers, kvHeads: o.kvHeads, headDim: o.headDim,
      policy: schemePolicy(s.name, { window: o.window, sinks: o.sinks, windowMode: o.windowMode }),
    });
    // B/cell: one token's K+V in one layer, bulk only (the per-cell cost the overlay sits on).
    return {
      scheme: s.name, k: s.k, v: s.v,
      bytesPerCell: b.bulk / (o.ctx * o.layers),
      bulkBytes: b.bulk, overlayBytes: b.sinks + b.window + b.anchors, stagingBytes: b.staging,
      totalBytes: b.total, totalGiB: b.total / GiB, bitsPerElement: b.bitsPerElement,
    };
  });
}

export function register(program: Command): void {
  program
    .command('memory')
    .description('KV-cache bytes for every scheme at a context (exact, scales and partial blocks included)')
    .option('--ctx <n>', 'context length (positions)', intArg('--ctx', 1), 262144)
    .option('--layers <n>', 'layers holding a KV cache', intArg('--layers', 1), 12)
    .option('--kv-heads <n>', 'KV heads per layer', intArg('--kv-heads', 1), 2)
    .option('--head-dim <n>', 'head dimension', intArg('--head-dim', 1), 256)
    .option('--window <n>', 'exact recent window (positions)', intArg('--window', 0), 0)
    .option('--sinks <n>', 'exact attention sinks (positions)', intArg('--sinks', 0), 0)
    .option('--window-mode <mode>', 'overlay | residual', 'overlay')
    .option('--json', 'machine-readable output')
    .action((opts: MemoryOpts) => {
      const rows = memoryTable(opts);
      if (opts.json) return void console.log(JSON.stringify({ config: opts, schemes: rows }, null, 2));
      console.log(`ctx ${opts.ctx}, ${opts.layers} layers, ${opts.kvHeads} KV heads x ${opts.headDim} dims, window ${opts.window} (${opts.windowMode}), sinks ${opts.sinks}`);
      console.log(table([
        ['scheme', 'K', 'V', 'B/cell', 'overlay', 'KV total', 'bits/elem'],
        ...rows.map((r) => [r.scheme, r.k, r.v, r.bytesPerCell.toFixed(r.bytesPerCell % 1 ? 2 : 0), `${(r.overlayBytes / 2 ** 20).toFixed(2)} MiB`, `${r.totalGiB.toFixed(2)} GiB`, r.bitsPerElement.toFixed(3)]),
      ]));
    });
}
