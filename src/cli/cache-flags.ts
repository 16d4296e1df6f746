// The KV cache flags shared by `run` and `chat` (llama.cpp's -ctk/-ctv plus our schemes, window, sinks
// and anchors) and the CachePolicy they describe.
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import type { AnchorPrecision, CachePolicy } from '../cache/policy.js';
import { schemePolicy } from '../cache/schemes.js';
import { intArg, intListArg } from './args.js';

export interface CacheFlags {
  kv?: string;
  cacheTypeK?: string;
  cacheTypeV?: string;
  kvWindow?: number;
  sinks?: number;
  anchors?: number;
  anchorLayers?: number[];
  anchorPrecision?: AnchorPrecision;
  swaFull?: boolean;
}

/** Adds the cache flags to a subcommand (commander fills CacheFlags' fields). */
export function addCacheFlags(cmd: Command): Command {
  return cmd
    .option('--kv <scheme>', 'named cache scheme (see `kvpack memory`)')
    .option('--cache-type-k <fmt>', 'K format (-ctk), default f16')
    .option('--cache-type-v <fmt>', 'V format (-ctv), default f16')
    .option('--kv-window <n>', 'exact recent window (positions)', intArg('--kv-window', 0))
    .option('--sinks <n>', 'exact attention sinks (positions)', intArg('--sinks', 0))
    .option('--anchors <n>', 'decode anchors: first N generated positions kept exact', intArg('--anchors', 0))
    .option('--anchor-layers <list>', 'layers keeping anchors (default all)', intListArg('--anchor-layers', 0))
    .option('--anchor-precision <p>', 'anchor precision: f16 | int8 | int4')
    .option('--swa-full', 'sliding-window layers keep every position (llama.cpp\'s --swa-full): more memory, any rewind reuses the cache');
}

/** The cache policy the flags describe: a named scheme, or K/V formats (default f16, llama.cpp's). */
export function policyFromFlags(o: CacheFlags): CachePolicy {
  if (o.kv && (o.cacheTypeK || o.cacheTypeV)) throw new ArgumentError('--kv picks K and V formats; do not combine it with --cache-type-k/--cache-type-v');
  const extra: Partial<CachePolicy> = {};
  if (o.kvWindow !== undefined) extra.window = o.kvWindow;
  if (o.sinks !== undefined) extra.sinks = o.sinks;
  if (o.anchors !== undefined) extra.anchors = { count: o.anchors, layers: o.anchorLayers ?? 'all', precision: o.anchorPrecision ?? 'f16' };
  else if (o.anchorLayers || o.anchorPrecision) throw new ArgumentError('--anchor-layers/--anchor-precision need --anchors N');
  // Otherwise the engine gives each sliding-window layer its window (model.createCache).
  if (o.swaFull) extra.slidingWindow = 0;
  if (o.kv) return schemePolicy(o.kv, extra);
  return { ...extra, k: o.cacheTypeK ?? 'f16', v: o.cacheTypeV ?? 'f16' };
}
