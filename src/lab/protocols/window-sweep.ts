// window-sweep (seed 000) runner and auditor, on the shared model-protocol machinery.
import type { Protocol } from '../protocol-types.js';
import { needPrompts, auditModelProtocol, promptsCheck, promptsLine, runModelProtocol, savedDefaultPrompts, type ModelProtocolHooks } from './model-runs.js';
import { parseWindowSweep, sweepArms, sweepHeadline, type WindowSweepSpec } from './window-sweep-core.js';

const hooks: ModelProtocolHooks<WindowSweepSpec> = {
  prompts: (model, spec, w) => savedDefaultPrompts(model, needPrompts(spec), w),
  arms: (_model, spec) => sweepArms(spec),
  headline: (spec, scores, _records, _ref, read) => [...sweepHeadline(spec, scores), '', promptsLine(read)],
  checks: (_spec, _records, ref, read, checks) => promptsCheck(ref, read, checks),
};

export const windowSweep: Protocol = {
  name: 'window-sweep',
  title: 'exact recent window 0/128/512/1024 (scaled) x schemes: KL, top-1, exact-match, tokens/s (seed 000)',
  file: 'protocols/window-sweep.json',
  needsModel: true,
  parse: parseWindowSweep,
  run: (spec, bytes, out, opts = {}) => runModelProtocol(hooks, spec as WindowSweepSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditModelProtocol(hooks, dir, spec as WindowSweepSpec, checks),
};
