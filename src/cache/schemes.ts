// Named schemes: presets of CachePolicy (K and V formats; window/sinks left to the caller).
import type { CachePolicy } from './policy.js';
import { UnknownSchemeError } from '../errors.js';

export interface Scheme {
  readonly name: string;
  readonly k: string;
  readonly v: string;
  readonly description: string;
}

const rows: Scheme[] = [
  { name: 'f16', k: 'f16', v: 'f16', description: 'exact fp16 K and V (the reference)' },
  { name: 'q8_0', k: 'q8_0', v: 'q8_0', description: 'ggml q8_0 K and V' },
  { name: 'q4_0', k: 'q4_0', v: 'q4_0', description: 'ggml q4_0 K and V' },
  { name: 'q2', k: 'q2c_0', v: 'q2c_0', description: 'K and V per-channel 2-bit Lloyd-Max (seed 000 symmetric q2)' },
  { name: 'q2k', k: 'q2c_0', v: 'q4_0', description: "K per-channel 2-bit + V q4_0 (seed 000); NOT ggml's Q2_K" },
  { name: 'kivi2', k: 'int2c_g32', v: 'int2_g32', description: 'KIVI 2-bit: K per-channel, V per-token, group 32' },
  { name: 'kivi4', k: 'int4c_g32', v: 'int4_g32', description: 'KIVI 4-bit: K per-channel, V per-token, group 32' },
  { name: 'nf4', k: 'nf4', v: 'int4_g64', description: 'NF4 K (g64) + int4-g64 V (seed 002)' },
  { name: 'int2s', k: 'int2s_g8', v: 'int2s_g4', description: 'magnitude-sorted 2-bit groups, g8 K / g4 V (seed 002), permutation counted' },
  { name: 'tern', k: 'tern_g8', v: 'tern_g4', description: 'ternary {-s,0,+s}, g8 K / g4 V (seed 002)' },
  { name: 'sign', k: 'sign_g8', v: 'sign_g4', description: 'sign {-s,+s}, g8 K / g4 V (seed 002)' },
];

export const schemes: ReadonlyMap<string, Scheme> = new Map(rows.map((s) => [s.name, s]));

/** A scheme as a CachePolicy, with optional extra fields (window, sinks, anchors...). */
export function schemePolicy(name: string, extra: Partial<CachePolicy> = {}): CachePolicy {
  const s = schemes.get(name);
  if (!s) throw new UnknownSchemeError(name, [...schemes.keys()]);
  return { ...extra, k: s.k, v: s.v };
}
