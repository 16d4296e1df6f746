// Typed reads of GGUF tokenizer metadata. The input is a plain key -> value view so this module does not
// depend on the GGUF reader: arrays may arrive as JS arrays or typed arrays, integers as number or bigint.
import { FileFormatError } from '../../errors.js';

export { TokenType, type TokenTypeId } from '../../gguf/tokenizer-spec.js';

/**
 * GGUF metadata keyed by full key name: a Map or a plain record of raw values, or the GGUF reader's map of
 * `{ type, value }` entries (unwrapped here).
 */
export type TokenizerMetadata = ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>;

/** Metadata keys read by the tokenizer. */
export const Keys = {
  model: 'tokenizer.ggml.model',
  pre: 'tokenizer.ggml.pre',
  tokens: 'tokenizer.ggml.tokens',
  scores: 'tokenizer.ggml.scores',
  tokenType: 'tokenizer.ggml.token_type',
  merges: 'tokenizer.ggml.merges',
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  eot: 'tokenizer.ggml.eot_token_id',
  eom: 'tokenizer.ggml.eom_token_id',
  unk: 'tokenizer.ggml.unknown_token_id',
  pad: 'tokenizer.ggml.padding_token_id',
  addBos: 'tokenizer.ggml.add_bos_token',
  addEos: 'tokenizer.ggml.add_eos_token',
  addSpacePrefix: 'tokenizer.ggml.add_space_prefix',
  chatTemplate: 'tokenizer.chat_template',
} as const;

const KIND = 'tokenizer metadata';

/** Raw value for `key`, or undefined when absent. */
export function metaGet(meta: TokenizerMetadata, key: string): unknown {
  const v = meta instanceof Map ? meta.get(key) : Object.hasOwn(meta, key) ? (meta as Record<string, unknown>)[key] : undefined;
  const typed = typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v) && 'type' in v && 'value' in v;
  return typed ? (v as { value: unknown }).value : v;
}

export function metaString(meta: TokenizerMetadata, key: string): string | undefined {
  const v = metaGet(meta, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new FileFormatError(KIND, `${key} must be a string, got ${typeof v}`);
  return v;
}

export function metaBool(meta: TokenizerMetadata, key: string): boolean | undefined {
  const v = metaGet(meta, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new FileFormatError(KIND, `${key} must be a bool, got ${typeof v}`);
  return v;
}

/** A non-negative integer (token ids are u32 in GGUF; the reader may hand us a bigint). */
export function metaUint(meta: TokenizerMetadata, key: string): number | undefined {
  const v = metaGet(meta, key);
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new FileFormatError(KIND, `${key} must be a non-negative integer, got ${String(v)}`);
  }
  return n;
}

export function metaStrings(meta: TokenizerMetadata, key: string): readonly string[] | undefined {
  const v = metaGet(meta, key);
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
    throw new FileFormatError(KIND, `${key} must be an array of strings`);
  }
  return v as string[];
}

/** A numeric array (f32 scores, i32 token types) of at least `minLength` entries. */
export function metaNumbers(meta: TokenizerMetadata, key: string, minLength: number): ArrayLike<number> | undefined {
  const v = metaGet(meta, key);
  if (v === undefined) return undefined;
  const ok = ArrayBuffer.isView(v) && !(v instanceof DataView) && !(v instanceof BigInt64Array) && !(v instanceof BigUint64Array);
  if (!ok && !(Array.isArray(v) && v.every((x) => typeof x === 'number'))) {
    throw new FileFormatError(KIND, `${key} must be a numeric array`);
  }
  const arr = v as ArrayLike<number>;
  // llama.cpp refuses short arrays too: indexing past the end would read garbage there.
  if (arr.length < minLength) throw new FileFormatError(KIND, `${key} has ${arr.length} entries, need ${minLength}`);
  return arr;
}
