// `kvpack memory`: KV bytes per scheme at a context (seed 000's memory table), with overlay costs, and
// with sliding-window layers (gemma3) holding only their window as the engine's cache does.
import type { Command } from 'commander';
import { schemes, schemePolicy } from '../cache/schemes.js';
import { kvBytes } from '../cache/accounting.js';
import { withSlidingWindows } from '../cache/swa.js';
import { windowLabel } from '../cache/exact-from.js';
import { intArg, table } from './args.js';
import type { WindowMode } from '../cache/policy.js';
import { DEFAULT_SINKS, DEFAULT_WINDOW } from '../cache/defaults.js';
import { addRegionFlags, regionsFromFlags, type RegionFlags } from './cache-flags.js';

const GiB = 1024 ** 3;

interface MemoryOpts extends RegionFlags {
  ctx: number;
  layers: number;
  kvHeads: number;
  headDim: number;
  windowMode?: WindowMode;
  json?: boolean;
  /** Sliding window of the local layers (0: every layer global) and the pattern: every swaPattern-th layer is global. */
  slidingWindow?: number;
  swaPattern?: number;
}

/** Per layer: its sliding window, 0 for global layers (llama.cpp's set_swa_pattern: il % n == n - 1 is global). */
export function patternWindows(layers: number, window: number, pattern: number): number[] {
  return Array.from({ length: layers }, (_, l) => (window > 0 && l % pattern < pattern - 1 ? window : 0));
}

export function memoryTable(o: MemoryOpts) {
  const windows = patternWindows(o.layers, o.slidingWindow ?? 0, o.swaPattern ?? 6);
  return [...schemes.values()].map((s) => {
    const policy = schemePolicy(s.name, { ...regionsFromFlags(o), ...(o.windowMode ? { windowMode: o.windowMode } : {}) });
    const shape = { ctx: o.ctx, layers: o.layers, kvHeads: o.kvHeads, headDim: o.headDim };
    const full = kvBytes({ ...shape, policy });
    const b = kvBytes({ ...shape, policy: withSlidingWindows(policy, windows) });
    // B/cell: one token's K+V in one layer, bulk only (the per-cell cost the overlay sits on).
    return {
      scheme: s.name,
      k: s.k,
      v: s.v,
      bytesPerCell: full.bulk / (o.ctx * o.layers),
      bulkBytes: b.bulk,
      overlayBytes: b.sinks + b.window + b.anchors,
      stagingBytes: b.staging,
      totalBytes: b.total,
      totalGiB: b.total / GiB,
      bitsPerElement: b.bitsPerElement,
      /** Every position on every layer (what sliding-window layers save is the difference). */
      keepAllBytes: full.total,
    };
  });
}

/** Window and sinks in force over a lossy bulk (the flags, else the defaults every command shares). */
function regionsInForce(o: MemoryOpts): { window: number; sinks: number } {
  return { window: o.kvWindow ?? DEFAULT_WINDOW, sinks: o.sinks ?? DEFAULT_SINKS };
}

export function register(program: Command): void {
  const cmd = program
    .command('memory')
    .description('KV-cache bytes for every scheme at a context (exact, scales and partial blocks included)')
    .option('--ctx <n>', 'context length (positions)', intArg('--ctx', 1), 262144)
    .option('--layers <n>', 'layers holding a KV cache', intArg('--layers', 1), 12)
    .option('--kv-heads <n>', 'KV heads per layer', intArg('--kv-heads', 1), 2)
    .option('--head-dim <n>', 'head dimension', intArg('--head-dim', 1), 256);
  addRegionFlags(cmd)
    .option('--window-mode <mode>', 'overlay | residual', 'overlay')
    .option(
      '--sliding-window <n>',
      'sliding-window attention on the local layers: they hold only this many positions (gemma3: 512 or 1024)',
      intArg('--sliding-window', 0),
      0,
    )
    .option('--swa-pattern <n>', 'with --sliding-window: every n-th layer is global (gemma3: 6)', intArg('--swa-pattern', 1), 6)
    .option('--json', 'machine-readable output')
    .action((opts: MemoryOpts) => {
      const rows = memoryTable(opts);
      const { window, sinks } = regionsInForce(opts);
      if (opts.json) return void console.log(JSON.stringify({ config: { ...opts, window, sinks }, schemes: rows }, null, 2));
      const swa = opts.slidingWindow
        ? `, sliding window ${opts.slidingWindow} on ${patternWindows(opts.layers, opts.slidingWindow, opts.swaPattern ?? 6).filter((w) => w > 0).length} layers`
        : '';
      console.log(
        `ctx ${opts.ctx}, ${opts.layers} layers, ${opts.kvHeads} KV heads x ${opts.headDim} dims, ${windowLabel(window)}, ${opts.windowMode}, sinks ${sinks} over lossy formats${swa}`,
      );
      const gib = (x: number) => `${(x / GiB).toFixed(2)} GiB`;
      console.log(
        table([
          ['scheme', 'K', 'V', 'B/cell', 'overlay', 'KV total', ...(swa ? ['keep-all'] : []), 'bits/elem'],
          ...rows.map((r) => [
            r.scheme,
            r.k,
            r.v,
            r.bytesPerCell.toFixed(r.bytesPerCell % 1 ? 2 : 0),
            `${(r.overlayBytes / 2 ** 20).toFixed(2)} MiB`,
            gib(r.totalBytes),
            ...(swa ? [gib(r.keepAllBytes)] : []),
            r.bitsPerElement.toFixed(3),
          ]),
        ]),
      );
    });
}
