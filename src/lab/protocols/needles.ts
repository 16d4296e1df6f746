// needles (seed 000) runner and auditor: planted needles saved as inputs; recall recomputed from the saved
// continuations; the planting re-checked against the saved prompts.
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
    checks.add(
      `needles: each prompt is the one recorded, its needle within ${spec.depthTolerance} of its depth, the answer within the horizon`,
      ...countFailures(
        needles,
        (n) => {
          const p = ref.entries.find((e) => e.prompt.id === n.prompt)?.prompt.tokens;
          return (
            !!p &&
            p.length === n.length &&
            Math.abs(n.at / n.length - n.depth) <= spec.depthTolerance &&
            n.answer.length > 0 &&
            n.answer.length <= spec.horizon &&
            n.onset >= 0 &&
            n.onset < n.answer.length
          );
        },
        (n) => n.prompt,
      ),
    );
    // Id needles are checked token for token: the cue ends the prompt and the answer follows it at the needle.
    const idNeedles = needles.filter((n) => n.name === undefined);
    if (idNeedles.length > 0) {
      const c = spec.ids.cue;
      checks.add(
        "needles (ids): the prompt ends with the needle's first tokens, which precede the answer where it was planted",
        ...countFailures(
          idNeedles,
          (n) => {
            const p = ref.entries.find((e) => e.prompt.id === n.prompt)!.prompt.tokens;
            return p.slice(n.at, n.at + c).join() === p.slice(p.length - c).join() && p.slice(n.at + c, n.at + c + n.answer.length).join() === n.answer.join();
          },
          (n) => n.prompt,
        ),
      );
    }
  },
};

export const needles: Protocol = {
  name: 'needles',
  title: 'a made-up name (ids without a tokenizer) planted at 25/50/90% of a story, recalled by copying after a cue, f16 first (seed 000)',
  file: 'protocols/needles.json',
  needsModel: true,
  parse: parseNeedles,
  run: (spec, bytes, out, opts = {}) => runModelProtocol(hooks, spec as NeedlesSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditModelProtocol(hooks, dir, spec as NeedlesSpec, checks),
};
