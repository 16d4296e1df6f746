// The format registry: the traits table. Adding a format = one file + one row here.
import type { KvFormat } from './format.js';
import { DefinitionError, UnknownFormatError } from '../errors.js';
import { f32 } from './f32.js';
import { f16 } from './f16.js';
import { bf16 } from './bf16.js';
import { q8_0 } from './q8_0.js';
import { q4_0 } from './q4_0.js';
import { q4_1 } from './q4_1.js';
import { q5_0 } from './q5_0.js';
import { q5_1 } from './q5_1.js';
import { iq4_nl } from './iq4_nl.js';
import { q2c_0 } from './q2c_0.js';
import { nf4 } from './nf4.js';
import { affineFormats } from './affine.js';
import { int2s_g8, int2s_g4 } from './int2s.js';
import { tern_g32, tern_g8, tern_g4 } from './tern.js';
import { sign_g32, sign_g8, sign_g4 } from './sign.js';

const rows: KvFormat[] = [
  f32,
  f16,
  bf16,
  q8_0,
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  iq4_nl,
  q2c_0,
  nf4,
  ...affineFormats,
  int2s_g8,
  int2s_g4,
  tern_g32,
  tern_g8,
  tern_g4,
  sign_g32,
  sign_g8,
  sign_g4,
];

/** Every registered format by id. */
export const formats: ReadonlyMap<string, KvFormat> = (() => {
  const m = new Map<string, KvFormat>();
  for (const f of rows) {
    if (m.has(f.id)) throw new DefinitionError(`format '${f.id}' registered twice`);
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
