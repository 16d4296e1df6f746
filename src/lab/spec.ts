// Small readers for frozen protocol JSON: each throws FileFormatError naming the field.
import { FileFormatError } from '../errors.js';

export type Json = Record<string, unknown>;

function bad(field: string, want: string, got: unknown): never {
  throw new FileFormatError('protocol', `field '${field}' must be ${want}, got ${JSON.stringify(got)}`);
}

export function obj(x: unknown, field: string): Json {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) bad(field, 'an object', x);
  return x as Json;
}

export function num(o: Json, field: string, check: (x: number) => boolean = Number.isFinite): number {
  const x = o[field];
  if (typeof x !== 'number' || !check(x)) bad(field, 'a valid number', x);
  return x;
}

export function str(o: Json, field: string, allowed?: readonly string[]): string {
  const x = o[field];
  if (typeof x !== 'string' || (allowed && !allowed.includes(x))) bad(field, allowed ? `one of ${allowed.join('|')}` : 'a string', x);
  return x;
}

export function nums(o: Json, field: string, check: (x: number) => boolean = Number.isFinite): number[] {
  const x = o[field];
  if (!Array.isArray(x) || x.length === 0 || !x.every((v) => typeof v === 'number' && check(v))) bad(field, 'a non-empty array of valid numbers', x);
  return x as number[];
}

export function strs<T extends string>(o: Json, field: string, allowed: readonly T[]): T[] {
  const x = o[field];
  if (!Array.isArray(x) || x.length === 0 || !x.every((v) => allowed.includes(v as T))) bad(field, `a non-empty array of ${allowed.join('|')}`, x);
  return x as T[];
}

export const isPosInt = (x: number) => Number.isInteger(x) && x > 0;
export const isNonNegInt = (x: number) => Number.isInteger(x) && x >= 0;
