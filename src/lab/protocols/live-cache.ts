// live-cache (seed 000 on a real run) runner and auditor, on the shared model-protocol machinery.
import type { Protocol } from '../protocol-types.js';
import {
  needPrompts,
  auditModelProtocol,
  promptsCheck,
  promptsLine,
  runModelProtocol,
  savedDefaultPrompts,
  savedOutcomes,
  MODEL_FILE,
  type ModelInfo,
  type ModelProtocolHooks,
} from './model-runs.js';
import { countFailures } from '../checks.js';
import { equalBytesRows, liveArms, liveHeadline, parseLiveCache, perPrompt, type LiveCacheSpec } from './live-cache-core.js';

const hooks: ModelProtocolHooks<LiveCacheSpec> = {
  prompts: (model, spec, w) => savedDefaultPrompts(model, needPrompts(spec), w),
  arms: (_model, spec) => liveArms(spec),
  headline: (spec, scores, records, ref, read, readBytes) => {
    const info = JSON.parse(read(MODEL_FILE)) as ModelInfo;
    const perText = records
      .filter((r) => spec.arms.some((a) => a.name === r.arm.name))
      .flatMap((r) => {
        const runs = savedOutcomes(ref, spec.topK, r, readBytes);
        return ref.entries.map((e, i) => ({
          prompt: e.prompt.id,
          arm: r.arm.name,
          score: perPrompt(ref, ref.digests, spec.topK, r.arm, runs, info.shape, spec.horizons, i),
        }));
      });
    return [...liveHeadline(spec, scores, records, perText, info.shape), '', promptsLine(read)];
  },
  checks: (spec, records, ref, read, checks) => {
    promptsCheck(ref, read, checks);
    if (!spec.budgetArm) return;
    const rows = equalBytesRows(spec, records, (JSON.parse(read(MODEL_FILE)) as ModelInfo).shape.layers);
    checks.add(
      `equal bytes: every equal-bytes arm's measured bytes per cell (cache.nbytes) within ${(100 * spec.equalBytesTolerance).toFixed(1)}% of ${spec.budgetArm}'s`,
      ...(rows.length
        ? countFailures(
            rows,
            (r) => r.ok,
            (r) => `${r.arm} ${r.bytes.toFixed(1)} vs ${r.budget.toFixed(1)}`,
          )
        : ([false, 'no equal-bytes arm'] as [boolean, string])),
    );
  },
};

export const liveCache: Protocol = {
  name: 'live-cache',
  title: 'live cache of a real run: per-layer attention error, equal-bytes arms, logits per text, loops (seed 000)',
  file: 'protocols/live-cache.json',
  needsModel: true,
  parse: parseLiveCache,
  run: (spec, bytes, out, opts = {}) => runModelProtocol(hooks, spec as LiveCacheSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditModelProtocol(hooks, dir, spec as LiveCacheSpec, checks),
};
