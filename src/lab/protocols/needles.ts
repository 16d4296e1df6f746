// needles (seed 000) runner and auditor: planted facts saved as inputs; recall recomputed from the saved
// continuations; the planting itself re-checked against the saved prompts.
import type { Protocol } from '../protocol-types.js';
import { countFailures } from '../checks.js';
import { auditModelProtocol, runModelProtocol, type ModelProtocolHooks } from './model-runs.js';
import { needleArms, needlesHeadline, parseNeedles, plantNeedles, type Needle, type NeedlesSpec } from './needles-core.js';

const NEEDLES_FILE = 'inputs/needles.json';

const hooks: ModelProtocolHooks<NeedlesSpec> = {
  prompts: (model, spec, w) => {
    const { prompts, needles } = plantNeedles(model, spec);
    w.writeJson(NEEDLES_FILE, needles, 'input');
    return prompts;
  },
  arms: (_model, spec) => needleArms(spec),
  headline: (spec, scores, records, ref, read) => needlesHeadline(spec, JSON.parse(read(NEEDLES_FILE)) as Needle[], records, ref, scores),
  checks: (spec, _records, ref, read, checks) => {
    const needles = JSON.parse(read(NEEDLES_FILE)) as Needle[];
    checks.add('needles: each prompt holds its needle at the recorded depth and ends with the cue', ...countFailures(needles, (n) => {
      const p = ref.entries.find((e) => e.prompt.id === n.prompt)?.prompt.tokens;
      if (!p || p.length !== spec.context + spec.cue) return false;
      return p.slice(n.at, n.at + n.tokens.length).join() === n.tokens.join() && p.slice(spec.context).join() === n.tokens.slice(0, spec.cue).join() && Math.abs(n.at / spec.context - n.depth) < 0.01;
    }, (n) => n.prompt));
  },
};

export const needles: Protocol = {
  name: 'needles',
  title: 'token-id facts planted at 25/50/90% depth, recalled exactly after a cue or not (seed 000)',
  file: 'protocols/needles.json',
  needsModel: true,
  parse: parseNeedles,
  run: (spec, bytes, out, opts = {}) => runModelProtocol(hooks, spec as NeedlesSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditModelProtocol(hooks, dir, spec as NeedlesSpec, checks),
};
