// Typed metadata getters: a missing key or a value of another wire type is an error naming both.
import { FileFormatError } from '../errors.js';
import type { GgufArray, GgufArrayItems, GgufItemType, GgufValue } from './values.js';

export type Metadata = ReadonlyMap<string, GgufValue>;

function fail(key: string, message: string): FileFormatError {
  return new FileFormatError('gguf', `metadata '${key}': ${message}`);
}

function get(md: Metadata, key: string, type: GgufValue['type']): GgufValue | undefined {
  const v = md.get(key);
  if (v === undefined) return undefined;
  if (v.type !== type) {
    const found = v.type === 'array' ? `array of ${v.itemType}` : v.type;
    throw fail(key, `expected ${type}, found ${found}`);
  }
  return v;
}

function missing(key: string, type: string): FileFormatError {
  return fail(key, `missing (expected ${type})`);
}

/** u32 value; `fallback` is returned when the key is absent (a present key of another type still throws). */
export function getU32(md: Metadata, key: string, fallback?: number): number {
  const v = get(md, key, 'u32');
  if (v) return v.value as number;
  if (fallback !== undefined) return fallback;
  throw missing(key, 'u32');
}

export function getF32(md: Metadata, key: string, fallback?: number): number {
  const v = get(md, key, 'f32');
  if (v) return v.value as number;
  if (fallback !== undefined) return fallback;
  throw missing(key, 'f32');
}

export function getString(md: Metadata, key: string, fallback?: string): string {
  const v = get(md, key, 'string');
  if (v) return v.value as string;
  if (fallback !== undefined) return fallback;
  throw missing(key, 'string');
}

export function getBool(md: Metadata, key: string, fallback?: boolean): boolean {
  const v = get(md, key, 'bool');
  if (v) return v.value as boolean;
  if (fallback !== undefined) return fallback;
  throw missing(key, 'bool');
}

/**
 * Any integer type (u8..i64) as a number: for keys writers disagree on (u32 vs i32 vs u64).
 * Values outside the safe-integer range are an error rather than a silently rounded number.
 */
export function getInt(md: Metadata, key: string, fallback?: number): number {
  const v = md.get(key);
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw missing(key, 'integer');
  }
  if (v.type === 'u64' || v.type === 'i64') {
    const n = Number(v.value);
    if (!Number.isSafeInteger(n)) throw fail(key, `${v.value} is outside the safe integer range`);
    return n;
  }
  if (v.type === 'array' || v.type === 'string' || v.type === 'bool' || v.type === 'f32' || v.type === 'f64') {
    throw fail(key, `expected an integer, found ${v.type === 'array' ? `array of ${v.itemType}` : v.type}`);
  }
  return v.value as number;
}

/** The array under `key`; with `itemType` its items are checked to be of that type. */
export function getArray<K extends GgufItemType>(md: Metadata, key: string, itemType: K): GgufArrayItems[K];
export function getArray(md: Metadata, key: string): GgufArray;
export function getArray(md: Metadata, key: string, itemType?: GgufItemType): GgufArray | GgufArrayItems[GgufItemType] {
  const v = get(md, key, 'array') as GgufArray | undefined;
  if (!v) throw missing(key, itemType ? `array of ${itemType}` : 'array');
  if (itemType === undefined) return v;
  if (v.itemType !== itemType) throw fail(key, `expected array of ${itemType}, found array of ${v.itemType}`);
  return v.value;
}
