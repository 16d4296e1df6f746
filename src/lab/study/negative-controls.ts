// The study's negative controls (seed 002's lesson: a measurement that cannot fail proves nothing): the same
// arm run honestly and under each sabotage; the control meant to catch that sabotage must FAIL, and the honest
// run must pass them all. Verdicts are pure functions of the saved records, so the audit re-derives them.
import type { CachePolicy } from '../../cache/policy.js';
import { schemePolicy } from '../../cache/schemes.js';
import { CheckList } from '../checks.js';
import { runArm, type EvalArm } from '../eval.js';
import type { Model } from '../../model/model.js';
import { computeReference, REFERENCE_POLICY, type EvalPrompt } from '../reference-logits.js';
import { storeErrorOk } from '../stored-error.js';
import { placementChecks, READ_TOLERANCE, sabotagedPolicy, type ArmRecord, type Sabotage } from '../protocols/model-runs.js';

export type ControlName = 'stored K/V read-back' | 'attention read-back' | 'anchor placement';
export const CONTROLS: readonly ControlName[] = ['stored K/V read-back', 'attention read-back', 'anchor placement'];

export interface NegativeCase {
  readonly name: string;
  readonly sabotage: Sabotage;
  /** The control that must fail (none: the honest run, which must pass every control). */
  readonly mustFail: ControlName | null;
}

export const CASES: readonly NegativeCase[] = [
  { name: 'honest run', sabotage: {}, mustFail: null },
  { name: 'quantization silently off (stored as f32)', sabotage: { disableQuantization: true }, mustFail: 'stored K/V read-back' },
  { name: 'cache destroyed at read time (storage intact)', sabotage: { corruptRead: true }, mustFail: 'attention read-back' },
  { name: 'anchors on the wrong layers (seed 002 retraction)', sabotage: { wrongAnchorLayers: true }, mustFail: 'anchor placement' },
  { name: 'no anchors (silently dropped)', sabotage: { dropAnchors: true }, mustFail: 'anchor placement' },
];

export interface CaseRecord {
  readonly case: NegativeCase;
  readonly record: ArmRecord;
}

/** The arm every case runs: q4_0 everywhere, decode anchors on layer 0 only (window 0, sinks 0). */
export function controlArm(anchors: number): EvalArm {
  const policy: CachePolicy = schemePolicy('q4_0', { window: 0, sinks: 0, anchors: { count: anchors, layers: [0], precision: 'f16' } });
  return { name: `q4_0+a${anchors}@L0`, policy };
}

export function runNegativeControls(model: Model, modelSha: string, prompt: EvalPrompt, horizon: number): CaseRecord[] {
  const ref = computeReference(model, { model: modelSha, policy: REFERENCE_POLICY, horizon, prompts: [prompt] });
  const arm = controlArm(Math.max(1, horizon >> 1));
  return CASES.map((c) => {
    const runs = runArm(model, ref, arm, {
      checkLayers: true,
      checkAttention: true,
      actualPolicy: sabotagedPolicy(arm.policy, c.sabotage, model.hp.nLayer),
      corruptRead: c.sabotage.corruptRead,
    });
    return { case: c, record: { arm, outcomes: runs.map(({ logits: _l, ...rest }) => rest) } };
  });
}

/** Each control's verdict on one record (true = PASS). */
export function verdicts(r: ArmRecord, floor: number): Record<ControlName, boolean> {
  const o = r.outcomes[0]!;
  const placed = new CheckList();
  placementChecks([r], o.placement?.length ?? 0, placed);
  return {
    'stored K/V read-back': (o.layerErrors ?? []).length > 0 && o.layerErrors!.every((e) => storeErrorOk(e, floor)),
    'attention read-back': (o.attention ?? []).length > 0 && o.attention!.every((a) => a.readRelRms === null || a.readRelRms < READ_TOLERANCE),
    'anchor placement': placed.pass,
  };
}

/** The study's check: every sabotage fails its control, the honest run passes every control. */
export function negativeCheck(cases: readonly CaseRecord[], floor: number, checks: CheckList): void {
  for (const c of cases) {
    const v = verdicts(c.record, floor);
    const detail = CONTROLS.map((n) => `${n} ${v[n] ? 'PASS' : 'FAIL'}`).join(', ');
    if (c.case.mustFail === null)
      checks.add(
        `negative controls: the ${c.case.name} passes every control`,
        CONTROLS.every((n) => v[n]),
        detail,
      );
    else checks.add(`negative controls: ${c.case.name} fails the ${c.case.mustFail} control`, !v[c.case.mustFail], detail);
  }
}

export function negativeTable(cases: readonly CaseRecord[], floor: number): string[] {
  return [
    `Negative controls: one prompt, arm ${cases[0]?.record.arm.name ?? ''}, run honestly and under each sabotage (test hooks; never set by the CLI). A control that cannot fail proves nothing: each sabotage must FAIL the control meant for it.`,
    '',
    `| case | ${CONTROLS.join(' | ')} | must fail | as required |`,
    `|---|${CONTROLS.map(() => '---').join('|')}|---|---|`,
    ...cases.map((c) => {
      const v = verdicts(c.record, floor);
      const ok = c.case.mustFail === null ? CONTROLS.every((n) => v[n]) : !v[c.case.mustFail];
      return `| ${c.case.name} | ${CONTROLS.map((n) => (v[n] ? 'PASS' : 'FAIL')).join(' | ')} | ${c.case.mustFail ?? '-'} | ${ok ? 'yes' : 'NO'} |`;
    }),
  ];
}
