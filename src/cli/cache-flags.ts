// The KV cache flags shared by `run` and `chat` (llama.cpp's -ctk/-ctv plus our schemes, window, sinks
// and anchors) and the CachePolicy they describe. The window and sinks flags are the same for every command
// that builds a cache (addRegionFlags) and have no defaults of their own: cache/defaults.ts has them.
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import type { AnchorPrecision, CachePolicy } from '../cache/policy.js';
import { schemePolicy } from '../cache/schemes.js';
import type { AttentionPrecision } from '../cache/kvcache.js';
import type { QPrecision, VPrecision } from '../kernels/attention/attend.js';
import { intArg, intListArg } from './args.js';
import { DEFAULT_SINKS, DEFAULT_WINDOW } from '../cache/defaults.js';

/** The exact-region flags (`--window` is accepted as an alias of `--kv-window`, see args.ts). */
export interface RegionFlags {
  kvWindow?: number;
  sinks?: number;
}

/** Adds --kv-window and --sinks; absent flags leave the defaults of cache/defaults.ts in force. */
export function addRegionFlags(cmd: Command): Command {
  return cmd
    .option('--kv-window <n>', `exact recent window over a lossy bulk (positions; default ${DEFAULT_WINDOW})`, intArg('--kv-window', 0))
    .option('--sinks <n>', `exact attention sinks over a lossy bulk (positions; default ${DEFAULT_SINKS})`, intArg('--sinks', 0));
}

/** The policy fields the region flags set (only those given). */
export function regionsFromFlags(o: RegionFlags): Partial<CachePolicy> {
  const extra: Partial<CachePolicy> = {};
  if (o.kvWindow !== undefined) extra.window = o.kvWindow;
  if (o.sinks !== undefined) extra.sinks = o.sinks;
  return extra;
}

export interface CacheFlags extends RegionFlags {
  kv?: string;
  cacheTypeK?: string;
  cacheTypeV?: string;
  anchors?: number;
  anchorLayers?: number[];
  anchorPrecision?: AnchorPrecision;
  swaFull?: boolean;
  attnQ?: string;
  attnV?: string;
}

/** Adds the cache flags to a subcommand (commander fills CacheFlags' fields). */
export function addCacheFlags(cmd: Command): Command {
  return addRegionFlags(
    cmd
      .option('--kv <scheme>', 'named cache scheme (see `kvpack memory`)')
      .option('--cache-type-k <fmt>', 'K format (-ctk), default f16')
      .option('--cache-type-v <fmt>', 'V format (-ctv), default f16'),
  )
    .option('--anchors <n>', 'decode anchors: first N generated positions kept exact', intArg('--anchors', 0))
    .option('--anchor-layers <list>', 'layers keeping anchors (default all)', intListArg('--anchor-layers', 0))
    .option('--anchor-precision <p>', 'anchor precision: f16 | int8 | int4')
    .option('--swa-full', "sliding-window layers keep every position (llama.cpp's --swa-full): more memory, any rewind reuses the cache")
    .option('--attn-q <p>', `how q meets packed K: ${Q_CHOICES.join(' | ')} (default f32: exact dots; int8 is llama.cpp's choice)`)
    .option('--attn-v <p>', `how softmax weights meet packed V: ${V_CHOICES.join(' | ')} (default f32; int16 rounds them per 32 tokens)`);
}

const Q_CHOICES: readonly QPrecision[] = ['f32', 'int8', 'int16'];
const V_CHOICES: readonly VPrecision[] = ['f32', 'int16'];

/** The attention accuracy choices the flags name (kernels/attention/attend.ts); unknown values are an error. */
export function attentionFromFlags(o: CacheFlags): AttentionPrecision {
  const pick = <T extends string>(flag: string, v: string | undefined, choices: readonly T[]): T | undefined => {
    if (v === undefined) return undefined;
    if (!(choices as readonly string[]).includes(v)) throw new ArgumentError(`${flag} must be one of ${choices.join(', ')}, got '${v}'`);
    return v as T;
  };
  return { q: pick('--attn-q', o.attnQ, Q_CHOICES), v: pick('--attn-v', o.attnV, V_CHOICES) };
}

/** The cache policy the flags describe: a named scheme, or K/V formats (default f16, llama.cpp's). */
export function policyFromFlags(o: CacheFlags): CachePolicy {
  if (o.kv && (o.cacheTypeK || o.cacheTypeV)) throw new ArgumentError('--kv picks K and V formats; do not combine it with --cache-type-k/--cache-type-v');
  const extra = regionsFromFlags(o);
  if (o.anchors !== undefined)
    extra.anchors = { count: o.anchors, layers: o.anchorLayers ?? 'all', ...(o.anchorPrecision ? { precision: o.anchorPrecision } : {}) };
  else if (o.anchorLayers || o.anchorPrecision) throw new ArgumentError('--anchor-layers/--anchor-precision need --anchors N');
  // Otherwise the engine gives each sliding-window layer its window (model.createCache).
  if (o.swaFull) extra.slidingWindow = 0;
  if (o.kv) return schemePolicy(o.kv, extra);
  return { ...extra, k: o.cacheTypeK ?? 'f16', v: o.cacheTypeV ?? 'f16' };
}
