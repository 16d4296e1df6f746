// anchors (seed 002): decode anchors N in {0,2,8,32}, precision f16/int8/int4, layer sets all / probe-chosen /
// layer 0 only, over schemes down to sign. Every layer is quantized; anchors only protect (the retraction's
// corrected semantics). Exact-match at 50/100, format vs effective bits.
import type { AnchorPrecision, CachePolicy, LayerOverride } from '../../cache/policy.js';
import { kvBytes } from '../../cache/accounting.js';
import { schemePolicy } from '../../cache/schemes.js';
import { FileFormatError } from '../../errors.js';
import { exactCell, fmt, intervalNote, klLabel, withCi, type ArmScore, type EvalArm } from '../eval.js';
import type { DefaultPromptSpec } from '../prompts.js';
import { obj, num, nums, str, strs, isNonNegInt, isPosInt, type Json } from '../spec.js';
import { parseModelEval, parsePromptSpec, schemeList, type ModelEvalSpec } from './model-runs.js';

export type LayerSet = 'all' | 'probe' | 'layer0';
export interface AnchorSweep {
  /** Schemes this sweep runs on (default: all of spec.schemes): a fractional design runs each level on a few. */
  readonly schemes?: readonly string[];
  readonly counts: readonly number[];
  readonly precisions: readonly AnchorPrecision[];
  readonly layerSets: readonly LayerSet[];
  /**
   * decode (default): anchors only protect the first N generated positions. prompt: seed 002's debunked
   * prompt-protection mode, the prompt also kept exact (f16) on the anchor layers: its bits grow with prefill.
   */
  readonly modes?: readonly AnchorMode[];
}
export type AnchorMode = 'decode' | 'prompt';

export interface AnchorsSpec extends ModelEvalSpec {
  readonly name: 'anchors';
  readonly schemes: readonly string[];
  readonly sweeps: readonly AnchorSweep[];
  /** The probe picking the 'probe' layer set: its top `layers` layers, ranked on these sequences. */
  readonly probe: { readonly layers: number; readonly sequences: DefaultPromptSpec };
}

export function parseAnchors(json: unknown): AnchorsSpec {
  const o = obj(json, 'protocol') as Json;
  if (str(o, 'name') !== 'anchors') throw new FileFormatError('protocol', 'name must be anchors');
  if (!Array.isArray(o.sweeps) || o.sweeps.length === 0) throw new FileFormatError('protocol', "field 'sweeps' must be a non-empty array");
  const p = obj(o.probe, 'probe');
  return {
    name: 'anchors',
    ...parseModelEval(o),
    schemes: schemeList(o, 'schemes'),
    sweeps: o.sweeps.map((x: unknown, i: number) => {
      const s = obj(x, `sweeps[${i}]`);
      const only = s.schemes === undefined ? undefined : schemeList(s, 'schemes');
      const all = schemeList(o, 'schemes');
      if (only?.some((x) => !all.includes(x))) throw new FileFormatError('protocol', `sweeps[${i}].schemes must be a subset of 'schemes'`);
      const modes = s.modes === undefined ? undefined : strs(s, 'modes', ['decode', 'prompt'] as const);
      return {
        ...(only && { schemes: only }),
        counts: nums(s, 'counts', isNonNegInt),
        precisions: strs(s, 'precisions', ['f16', 'int8', 'int4'] as const),
        layerSets: strs(s, 'layerSets', ['all', 'probe', 'layer0'] as const),
        ...(modes && { modes }),
      };
    }),
    probe: { layers: num(p, 'layers', isPosInt), sequences: parsePromptSpec(p.sequences, 'probe.sequences') },
  };
}

export interface AnchorArm extends EvalArm {
  readonly scheme: string;
  readonly count: number;
  readonly precision: AnchorPrecision | '-';
  readonly layerSet: LayerSet | '-';
  readonly layers: readonly number[] | 'all';
  /** Absent: decode (the protocol's original arms keep their JSON). */
  readonly mode?: AnchorMode;
}

/** Prompt-protection: the first `prompt` positions (the prompt) exact on the anchor layers, as sinks. */
export function promptProtected(policy: CachePolicy, layers: readonly number[] | 'all', prompt: number): CachePolicy {
  if (layers === 'all') return { ...policy, sinks: prompt };
  const over: Record<string, LayerOverride> = { ...(policy.layers ?? {}) };
  for (const l of layers) over[String(l)] = { ...(over[String(l)] ?? {}), sinks: prompt };
  return { ...policy, layers: over };
}

/** Schemes whose arms use the probe-chosen layer set (only these need a probe run). */
export function probedSchemes(spec: AnchorsSpec): string[] {
  return spec.schemes.filter((scheme) =>
    spec.sweeps.some((s) => (s.schemes ?? spec.schemes).includes(scheme) && s.layerSets.includes('probe') && s.counts.some((c) => c > 0)),
  );
}

/** Arms of every sweep, deduplicated by name; `probeLayers` maps scheme -> probe-chosen layers. */
export function anchorArms(spec: AnchorsSpec, nLayer: number, probeLayers: ReadonlyMap<string, readonly number[]>): AnchorArm[] {
  const out = new Map<string, AnchorArm>();
  for (const scheme of spec.schemes) {
    for (const sw of spec.sweeps) {
      if (sw.schemes && !sw.schemes.includes(scheme)) continue;
      for (const count of sw.counts) {
        for (const precision of sw.precisions) {
          for (const layerSet of sw.layerSets) {
            for (const mode of sw.modes ?? ['decode']) {
              const bare = { window: 0, sinks: 0 };
              if (count === 0) {
                out.set(`${scheme}/a0`, {
                  name: `${scheme}/a0`,
                  scheme,
                  count: 0,
                  precision: '-',
                  layerSet: '-',
                  layers: [],
                  policy: schemePolicy(scheme, bare),
                });
                continue;
              }
              const layers = layerSet === 'all' ? 'all' : layerSet === 'layer0' ? [0] : [...(probeLayers.get(scheme) ?? [])];
              if (layers !== 'all' && layers.some((l) => l >= nLayer)) continue;
              const policy = schemePolicy(scheme, { ...bare, anchors: { count, precision, layers } });
              if (mode === 'prompt') {
                const P = spec.prompts?.length ?? 0;
                const name = `${scheme}/p${count}-${precision}-${layerSet}`;
                out.set(name, { name, scheme, count, precision, layerSet, layers, mode, policy: promptProtected(policy, layers, P) });
                continue;
              }
              const name = `${scheme}/a${count}-${precision}-${layerSet}`;
              out.set(name, { name, scheme, count, precision, layerSet, layers, policy });
            }
          }
        }
      }
    }
  }
  return [...out.values()];
}

export function anchorsHeadline(spec: AnchorsSpec, arms: readonly AnchorArm[], scores: readonly ArmScore[]): string[] {
  const by = new Map(scores.map((s) => [s.arm, s]));
  const h = spec.horizons;
  return [
    `| scheme | anchors | precision | layers | ${h.map((x) => `exact@${x}`).join(' | ')} | prefix | ${klLabel(scores, 'KL decode')} | format bits | bulk bits | eff. bits |`,
    `|---|---:|---|---|${h.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|`,
    ...arms.map((a) => {
      const s = by.get(a.name)!;
      const layers = a.layers === 'all' ? 'all' : a.layers.length ? `${a.layerSet} (${a.layers.join(',')})` : '-';
      return `| ${a.scheme} | ${a.count}${a.mode === 'prompt' ? ' + prompt exact' : ''} | ${a.precision} | ${layers} | ${h.map((x) => exactCell(s, x)).join(' | ')} | ${s.prefixMean.toFixed(1)} | ${withCi(s, 'klDecode', s.klDecode, 4)} | ${s.formatBits.toFixed(2)} | ${fmt(s.bulkBits, 2)} | ${s.effectiveBits.toFixed(2)} |`;
    }),
    '',
    ...intervalNote(scores),
  ];
}

/**
 * Seed 002's finding: prompt protection's bits grow with prefill, decode-only anchors' do not. Formula bits
 * (kvBytes; the run's bytes check ties it to the cache's real bytes) at several prefill lengths + `decode`.
 */
export function prefillBitsTable(
  arms: readonly AnchorArm[],
  shape: { layers: number; kvHeads: number; headDim: number },
  prefills: readonly number[],
  decode: number,
  runPrompt: number,
): string[] {
  const prompt = arms.filter((a) => a.mode === 'prompt');
  if (prompt.length === 0) return [];
  const twin = (a: AnchorArm) =>
    arms.find((b) => b.mode === undefined && b.scheme === a.scheme && b.count === a.count && b.precision === a.precision && b.layerSet === a.layerSet);
  const bits = (a: AnchorArm, P: number) => {
    const policy = a.mode === 'prompt' ? promptProtected({ ...a.policy, sinks: 0, layers: undefined }, a.layers, P) : a.policy;
    const base = a.mode === 'prompt' ? { ...policy, anchors: a.policy.anchors } : policy;
    return kvBytes({ ctx: P + decode - 1, prompt: P, policy: base, ...shape }).bitsPerElement.toFixed(2);
  };
  const rows = prompt.flatMap((a) => [twin(a), a].filter((x): x is AnchorArm => x !== undefined));
  return [
    `Effective bits vs prefill (${decode} decoded tokens; formula, tied to the real bytes at the run's ${runPrompt}-token prompts by the bytes check): prompt protection grows with the prompt, decode-only anchors do not.`,
    '',
    `| arm | ${prefills.map((p) => `prefill ${p}`).join(' | ')} |`,
    `|---|${prefills.map(() => '---:').join('|')}|`,
    ...rows.map((a) => `| ${a.name} | ${prefills.map((p) => bits(a, p)).join(' | ')} |`),
  ];
}
