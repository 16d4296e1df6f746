// Policy files: `kvpack probe --out` writes {kind: 'kvpack-probe-policy', policy, ...} and any CachePolicy
// JSON works too; `kvpack eval --policy FILE` reads either, validated by planLayers (errors name the field).
import { basename } from 'node:path';
import { readWholeFile } from '../io/files.js';
import { FileFormatError } from '../errors.js';
import { planLayers, type CachePolicy } from '../cache/policy.js';

export const PROBE_POLICY_KIND = 'kvpack-probe-policy';

/** What probe --out writes: the policy plus what it was chosen for (the eval re-measures the bits). */
export interface ProbePolicyFile {
  readonly kind: typeof PROBE_POLICY_KIND;
  readonly scheme: string;
  readonly protect: 'exact' | 'anchors';
  readonly protectedLayers: readonly number[];
  /** Positions and prompt length the budget was computed at (the eval's context, not the probe's sequences). */
  readonly budgetAt: { readonly positions: number; readonly prompt: number };
  readonly budgetBits: number | null;
  readonly effectiveBits: number;
  readonly policy: CachePolicy;
}

/** Reads a probe policy file or a bare CachePolicy; `name` is the file's base name without .json. */
export function readPolicyFile(path: string, layers: number): { name: string; policy: CachePolicy; probe?: ProbePolicyFile } {
  let json: unknown;
  try {
    json = JSON.parse(readWholeFile(path, 'policy file').toString('utf8'));
  } catch (e) {
    if (e instanceof SyntaxError) throw new FileFormatError('policy file', `${path}: ${e.message}`);
    throw e;
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new FileFormatError('policy file', `${path}: expected a JSON object`);
  const o = json as Record<string, unknown>;
  const probe = o.kind === PROBE_POLICY_KIND ? (o as unknown as ProbePolicyFile) : undefined;
  const policy = (probe ? probe.policy : o) as CachePolicy;
  planLayers(policy, layers, Number.MAX_SAFE_INTEGER);
  return { name: basename(path).replace(/\.json$/, ''), policy, ...(probe && { probe }) };
}
