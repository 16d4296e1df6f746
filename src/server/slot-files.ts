// Slot save/restore: the slot's cache in the cache-file format (src/cache/file.ts) plus a sidecar
// `<file>.json` with the tokens it holds and the key they were computed under; files live inside
// --slot-save-path only, and a restore verifies both completely before the slot changes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { decodeCache, encodeCache } from '../cache/file.js';
import { writeAtomic } from '../io/atomic.js';
import type { Engine } from './engine.js';
import { badRequest, HttpError } from './http-error.js';
import type { Slot } from './slot.js';

interface Sidecar {
  tokens: number[];
  key: string | null;
  modelDigest: string;
  /** sha256 of the cache file: the two files belong together. */
  cacheSha256: string;
}

/** The path of `filename` inside dir; anything that is not a plain file name is refused. */
export function slotPath(dir: string | undefined, filename: string | undefined): string {
  if (!dir) throw new HttpError(501, 'invalid_request_error', 'slot files are off: start the server with --slot-save-path DIR');
  if (!filename || !/^[\w][\w.-]{0,254}$/.test(filename) || filename.includes('..'))
    throw badRequest(`filename must be a plain file name (letters, digits, _ . -), got ${JSON.stringify(filename)}`, 'filename');
  const root = resolve(dir);
  const p = resolve(root, filename);
  if (!p.startsWith(root + sep)) throw badRequest('filename escapes --slot-save-path', 'filename');
  return p;
}

export function saveSlot(engine: Engine, slot: Slot, path: string): { n_saved: number; n_written: number } {
  const image = encodeCache(slot.cache);
  const side: Sidecar = {
    tokens: slot.tokens.slice(0, slot.cache.length),
    key: slot.key,
    modelDigest: engine.modelDigest,
    cacheSha256: createHash('sha256').update(image).digest('hex'),
  };
  writeAtomic(path, image);
  writeAtomic(`${path}.json`, JSON.stringify(side));
  return { n_saved: side.tokens.length, n_written: image.length };
}

/** Loads both files, checks they match each other, this model and the slots' shape, then swaps the slot's cache. */
export function restoreSlot(engine: Engine, slot: Slot, path: string): { n_restored: number; n_read: number } {
  let image: Buffer;
  let side: Sidecar;
  try {
    image = readFileSync(path);
    side = JSON.parse(readFileSync(`${path}.json`, 'utf8')) as Sidecar;
  } catch (e) {
    throw badRequest(`cannot read slot file ${JSON.stringify(path.split(sep).pop())}: ${(e as Error).message.split(sep).pop()}`, 'filename');
  }
  if (!side || !Array.isArray(side.tokens) || !side.tokens.every((t) => Number.isInteger(t) && t >= 0 && t < engine.model.nVocab))
    throw badRequest('slot sidecar file is malformed', 'filename');
  if (side.modelDigest !== engine.modelDigest) throw badRequest('the slot file was saved with another model', 'filename');
  if (side.cacheSha256 !== createHash('sha256').update(image).digest('hex'))
    throw badRequest('the slot file does not match its sidecar (changed or truncated)', 'filename');
  const cache = decodeCache(image, 'slot file', (o) => engine.cacheLike(o, 'slot file'));
  if (cache.length !== side.tokens.length) {
    cache.dispose();
    throw badRequest(`the slot file holds ${cache.length} positions, its sidecar ${side.tokens.length} tokens`, 'filename');
  }
  slot.replaceCache(cache, side.tokens, typeof side.key === 'string' ? side.key : null);
  return { n_restored: side.tokens.length, n_read: image.length };
}
