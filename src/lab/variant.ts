// User variants of a built-in protocol: {"variantOf": NAME, "set": {field: value, ...}} replaces top-level
// fields of the frozen JSON. The run's protocol.json is the resolved spec with a "variant" record (base file
// sha256, the patch and its sha256), so the manifest's protocol hash freezes the variant; the audit re-resolves
// it. The built-in files are only read, never written.
import { readFileSync } from 'node:fs';
import { FileFormatError } from '../errors.js';
import { sha256 } from './hash.js';
import { loadProtocol, protocols } from './protocol.js';
import type { CheckList } from './checks.js';

export interface VariantRecord {
  readonly of: string;
  /** sha256 of the built-in frozen file the patch was applied to. */
  readonly baseSha256: string;
  readonly set: Record<string, unknown>;
  /** sha256 of JSON.stringify(set): the variant's identity. */
  readonly setSha256: string;
}

/** Fields a variant may not change: the protocol's identity. */
const FIXED = ['name', 'variant'];

/** The resolved protocol JSON of a variant file (bytes as protocol.json will hold them) and its protocol name. */
export function resolveVariant(path: string): { name: string; bytes: Uint8Array; record: VariantRecord } {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new FileFormatError('protocol variant', `${path}: ${(e as Error).message}`);
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new FileFormatError('protocol variant', `${path}: expected a JSON object`);
  return resolveVariantObject(json as Record<string, unknown>);
}

/** resolveVariant on a parsed variant ({variantOf, set}). */
export function resolveVariantObject(o: Record<string, unknown>): { name: string; bytes: Uint8Array; record: VariantRecord } {
  const of = o.variantOf;
  if (typeof of !== 'string' || !protocols.has(of))
    throw new FileFormatError(
      'protocol variant',
      `field 'variantOf' must name a registered protocol (${[...protocols.keys()].join(', ')}), got ${JSON.stringify(of)}`,
    );
  const set = o.set;
  if (!set || typeof set !== 'object' || Array.isArray(set))
    throw new FileFormatError('protocol variant', "field 'set' must be an object of top-level fields to replace");
  const bad = Object.keys(o).filter((k) => k !== 'variantOf' && k !== 'set' && k !== 'note');
  if (bad.length) throw new FileFormatError('protocol variant', `unknown field '${bad[0]}' (a variant has variantOf, set and an optional note)`);
  const fixed = Object.keys(set).find((k) => FIXED.includes(k));
  if (fixed) throw new FileFormatError('protocol variant', `set.${fixed} cannot be changed`);
  const { bytes: base, protocol } = loadProtocol(of);
  const record: VariantRecord = { of, baseSha256: sha256(base), set: set as Record<string, unknown>, setSha256: sha256(JSON.stringify(set)) };
  const resolved = resolve(JSON.parse(Buffer.from(base).toString('utf8')) as Record<string, unknown>, record);
  protocol.parse(resolved);
  return { name: of, bytes: Buffer.from(JSON.stringify(resolved, null, 2) + '\n'), record };
}

function resolve(base: Record<string, unknown>, v: VariantRecord): Record<string, unknown> {
  return { ...base, ...v.set, variant: v };
}

/** Audit lines for a run whose protocol.json is a variant. */
export function auditVariant(protocolJson: Record<string, unknown>, manifestVariant: VariantRecord | undefined, checks: CheckList): void {
  const v = protocolJson.variant as VariantRecord | undefined;
  if (!v && !manifestVariant) return;
  checks.add(
    'variant: the manifest records the variant protocol.json holds',
    JSON.stringify(v) === JSON.stringify(manifestVariant),
    v ? `${v.of} + ${Object.keys(v.set).join(', ')}` : 'missing in protocol.json',
  );
  if (!v) return;
  checks.add('variant: its patch hashes to the recorded sha256', sha256(JSON.stringify(v.set)) === v.setSha256, v.setSha256.slice(0, 12));
  const { bytes } = loadProtocol(v.of);
  if (sha256(bytes) !== v.baseSha256) {
    checks.note(`variant: this checkout's ${v.of} protocol differs from the run's base (${v.baseSha256.slice(0, 12)}); base fields not re-resolved`);
    return;
  }
  const again = resolve(JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>, v);
  checks.add(
    'variant: protocol.json equals the built-in base with the patch applied',
    JSON.stringify(again) === JSON.stringify(protocolJson),
    `${v.of} ${v.baseSha256.slice(0, 12)}`,
  );
}
