// A prefix entry as bytes for a second-tier store: u32 LE length | JSON {key, tokens} | the cache-file image
// of its packed cache (src/cache/file.ts: checksummed, verified completely before anything is built).
import type { KvCache, KvCacheOptions } from '../cache/kvcache.js';
import { decodeCache, encodeCache } from '../cache/file.js';
import { FileFormatError } from '../errors.js';

export type EntryCacheFactory = (o: KvCacheOptions) => KvCache;

export function serializeEntry(key: string, tokens: readonly number[], cache: KvCache): Uint8Array {
  const meta = Buffer.from(JSON.stringify({ key, tokens }), 'utf8');
  const pre = Buffer.alloc(4);
  pre.writeUInt32LE(meta.length, 0);
  return Buffer.concat([pre, meta, encodeCache(cache)]);
}

export function deserializeEntry(bytes: Uint8Array, make: EntryCacheFactory): { key: string; tokens: number[]; cache: KvCache } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = (m: string): never => {
    throw new FileFormatError('prefix entry', m);
  };
  if (buf.length < 4) bad('truncated');
  const n = buf.readUInt32LE(0);
  if (4 + n > buf.length) bad('truncated metadata');
  let meta: { key?: unknown; tokens?: unknown };
  try {
    meta = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as typeof meta;
  } catch {
    return bad('unreadable metadata');
  }
  const { key, tokens } = meta;
  if (typeof key !== 'string' || !Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0)) bad('bad metadata');
  const cache = decodeCache(buf.subarray(4 + n), 'prefix entry', make);
  return { key: key as string, tokens: tokens as number[], cache };
}
