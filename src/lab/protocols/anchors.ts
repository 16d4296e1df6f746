// anchors (seed 002) runner and auditor: a sensitivity probe per scheme picks the 'probe' layer set (saved,
// re-ranked by the audit), then every arm runs on the shared model-protocol machinery.
import type { Protocol } from '../protocol-types.js';
import { countFailures } from '../checks.js';
import { runProbe, type ProbeResult } from '../probe.js';
import type { PromptSource } from '../prompts.js';
import { storyOpenings } from '../story-openings.js';
import { storeErrorOk } from '../stored-error.js';
import {
  needPrompts,
  auditModelProtocol,
  promptsCheck,
  promptsLine,
  runModelProtocol,
  savedDefaultPrompts,
  MODEL_FILE,
  PROMPTS_FILE,
  type ModelInfo,
  type ModelProtocolHooks,
} from './model-runs.js';
import { anchorArms, anchorsHeadline, parseAnchors, prefillBitsTable, probedSchemes, type AnchorArm, type AnchorsSpec } from './anchors-core.js';

const withBlank = (lines: string[]) => (lines.length ? [...lines, ''] : lines);

const probeFile = (scheme: string) => `probe/${scheme}.json`;
const ARMS_FILE = 'arms.json';
/** The probe's calibration sequences (seed 002: never the evaluation prompts). */
const PROBE_PROMPTS_FILE = 'inputs/probe-prompts.json';
/** Id prompts: leading tokens (BOS + seeded ids) a probe sequence must not share with an evaluation prompt. */
const DISTINCT_PREFIX = 9;

/** The probe's choice recomputed from its saved KLs: the top `n` by klOnlyQuantized (ties: lower klOnlyExact). */
function rerank(p: ProbeResult, n: number): number[] {
  return [...p.layers]
    .sort((a, b) => b.klOnlyQuantized - a.klOnlyQuantized || a.klOnlyExact - b.klOnlyExact)
    .slice(0, n)
    .map((x) => x.layer)
    .sort((a, b) => a - b);
}

const hooks: ModelProtocolHooks<AnchorsSpec> = {
  prompts: (model, spec, w) => savedDefaultPrompts(model, needPrompts(spec), w),
  arms: (model, spec, w) => {
    const chosen = new Map<string, number[]>();
    const probed = probedSchemes(spec);
    if (probed.length > 0) {
      const sequences = savedDefaultPrompts(model, spec.probe.sequences, w, PROBE_PROMPTS_FILE);
      for (const scheme of probed) {
        const r = runProbe(model, { scheme, sequences, protect: 'anchors', errorFloor: spec.controls.errorFloor });
        w.writeJson(probeFile(scheme), r, 'output');
        chosen.set(scheme, rerank(r, spec.probe.layers));
      }
    }
    const arms = anchorArms(spec, model.hp.nLayer, chosen);
    w.writeJson(ARMS_FILE, arms, 'output');
    return arms;
  },
  headline: (spec, scores, _records, _ref, read) => [
    ...anchorsHeadline(spec, JSON.parse(read(ARMS_FILE)) as AnchorArm[], scores),
    '',
    ...withBlank(
      prefillBitsTable(
        JSON.parse(read(ARMS_FILE)) as AnchorArm[],
        (JSON.parse(read(MODEL_FILE)) as ModelInfo).shape,
        [...new Set([spec.prompts?.length ?? 64, 256, 1024, 4096])].sort((a, b) => a - b),
        spec.horizon,
        spec.prompts?.length ?? 0,
      ),
    ),
    promptsLine(read),
    ...(probedSchemes(spec).length > 0 ? [promptsLine(read, PROBE_PROMPTS_FILE, 'Probe sequences (layer set "probe")')] : []),
  ],
  checks: (spec, records, ref, read, checks) => {
    promptsCheck(ref, read, checks);
    const probed = probedSchemes(spec);
    if (probed.length === 0) return;
    checks.try('probe: its calibration sequences share no opening (story text) or leading ids with the evaluation prompts', () => {
      const evals = JSON.parse(read(PROMPTS_FILE)) as PromptSource[];
      const probe = JSON.parse(read(PROBE_PROMPTS_FILE)) as PromptSource[];
      const openings = (s: readonly PromptSource[]) => new Set(s.flatMap((p) => (p.set ? (p.openings ?? []).map((i) => storyOpenings[p.set!][i]) : [])));
      const evalOpenings = openings(evals);
      const head = (t: readonly number[]) => t.slice(0, DISTINCT_PREFIX).join();
      const evalHeads = new Set(evals.map((p) => head(p.tokens)));
      return countFailures(
        probe,
        (p) =>
          p.kind === 'story'
            ? (p.set === 'calibration' || p.set === 'doc-calibration') && ![...openings([p])].some((o) => evalOpenings.has(o))
            : !evalHeads.has(head(p.tokens)),
        (p) => `${p.id} (${p.set ?? p.kind})`,
      );
    });
    const arms = JSON.parse(read(ARMS_FILE)) as AnchorArm[];
    const probes = probed.map((s) => ({ s, p: JSON.parse(read(probeFile(s))) as ProbeResult }));
    checks.add(
      'probe: its stored K/V read-back control holds in every configuration',
      ...countFailures(
        probes.flatMap(({ s, p }) => p.controls.map((c) => ({ s, c }))),
        ({ c }) => c.layers.every((e) => storeErrorOk(e, spec.controls.errorFloor)),
        ({ s, c }) => `${s}: ${c.config}`,
      ),
    );
    checks.add(
      `probe: the 'probe' layer sets are the top ${spec.probe.layers} of the saved per-layer KLs`,
      ...countFailures(
        arms.filter((a) => a.layerSet === 'probe'),
        (a) => JSON.stringify(a.layers) === JSON.stringify(rerank(probes.find((x) => x.s === a.scheme)!.p, spec.probe.layers)),
        (a) => a.name,
      ),
    );
    checks.add(
      'arms: every arm ran with the policy arms.json records',
      ...countFailures(
        arms,
        (a) => JSON.stringify(records.find((r) => r.arm.name === a.name)?.arm.policy) === JSON.stringify(a.policy),
        (a) => a.name,
      ),
    );
  },
};

export const anchors: Protocol = {
  name: 'anchors',
  title: 'decode anchors N x precision x layer sets over schemes down to sign: exact-match at 50/100 (seed 002)',
  file: 'protocols/anchors.json',
  needsModel: true,
  parse: parseAnchors,
  run: (spec, bytes, out, opts = {}) => runModelProtocol(hooks, spec as AnchorsSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditModelProtocol(hooks, dir, spec as AnchorsSpec, checks),
};
