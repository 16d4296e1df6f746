// The format registry: the traits table. Adding a format = one file + one row here.
import type { KvFormat } from './format.js';
import { UnknownFormatError } from '../errors.js';
import { f32 } from './f32.js';
import { f16 } from './f16.js';
import { bf16 } from './bf16.js';
import { q8_0 } from './q8_0.js';
import { q4_0 } from './q4_0.js';

const rows: KvFormat[] = [
  f32,
  f16,
  bf16,
  q8_0,
  q4_0,
];

/** Every registered format by id. */
export const formats: ReadonlyMap<string, KvFormat> = (() => {
  const m = new Map<string, KvFormat>();
  for (const f of rows) {
    if (m.has(f.id)) throw new Error(`format '${f.id}' registered twice`);
    m.set(f.id, f);
  }
  return m;
})();

/** Looks up a format; unknown ids throw UnknownFormatError listing the known ones. */
export function getFormat(id: string): KvFormat {
  const f = formats.get(id);
  if (!f) throw new UnknownFormatError('format', id, [...formats.keys()]);
  return f;
}
