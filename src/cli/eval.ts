// `kvpack eval -m MODEL --kv f16,q8_0,q4_0,q2k`: one table per run of every scheme vs the f16-cache reference
// (KL, top-1, PPL delta, exact-match at 50/100, bytes, effective bits, tokens/s).
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import { schemePolicy } from '../cache/schemes.js';
import { windowLabel } from '../cache/exact-from.js';
import { loadModel } from '../model/model.js';
import { runArm, scoreArm, evalTable, type EvalArm } from '../lab/eval.js';
import { defaultPrompts, readPromptsFile } from '../lab/prompts.js';
import { loadOrComputeReference, modelSha256, REFERENCE_POLICY } from '../lab/reference-logits.js';
import { intArg } from './args.js';
import { paddingNote } from './padding-note.js';
import { addRegionFlags, regionsFromFlags, type RegionFlags } from './cache-flags.js';
import { DEFAULT_SINKS, DEFAULT_WINDOW } from '../cache/defaults.js';

interface EvalOpts extends RegionFlags {
  model: string;
  kv: string;
  prompts?: string;
  ctxSize?: number;
  horizon: number;
  count: number;
  seed: number;
  refCache: string;
  idPrompts?: boolean;
  json?: boolean;
}

const HORIZONS = [50, 100];

export function register(program: Command): void {
  const cmd = program
    .command('eval')
    .description('score cache schemes against the f16-cache reference (stored once, reused): one table')
    .requiredOption('-m, --model <path>', 'model file (.gguf or llama2.c .bin)')
    .option('--kv <list>', 'comma-separated schemes (see `kvpack memory`)', 'f16,q8_0,q4_0,q2k')
    .option('--prompts <file>', 'JSON lines: token ids ([1,2,3] or {"tokens": [...]}) or text ("..." or {"text": "..."})')
    .option('--id-prompts', 'default prompts from seeded random ids even when the model has a tokenizer (id-level work)')
    .option('-c, --ctx-size <n>', 'positions per sequence: default prompts get ctx - horizon tokens (default 256)', intArg('-c', 2))
    .option('--horizon <n>', 'greedy tokens per prompt (exact-match horizons 50 and 100)', intArg('--horizon', 1), 100)
    .option('--count <n>', 'default prompts: how many (held-out story openings with a tokenizer, else seeded ids)', intArg('--count', 1), 4)
    .option('--seed <n>', 'default prompts: seed (which openings, or which ids)', intArg('--seed', 0), 1);
  addRegionFlags(cmd)
    .option('--ref-cache <dir>', 'where reference logits are stored and reused', '.kvpack/reference')
    .option('--json', 'print the scores as JSON')
    .action((o: EvalOpts) => evalCommand(o));
}

function evalCommand(o: EvalOpts): void {
  // Over lossy schemes (an exact scheme holds no regions: cache/policy.ts).
  const window = o.kvWindow ?? DEFAULT_WINDOW;
  const sinks = o.sinks ?? DEFAULT_SINKS;
  const model = loadModel(o.model);
  const ctx = o.ctxSize ?? Math.min(256, model.hp.nCtxTrain);
  let prompts;
  if (o.prompts) prompts = readPromptsFile(o.prompts, model);
  else {
    if (ctx <= o.horizon + 9) throw new ArgumentError(`-c ${ctx} leaves no room for a prompt before ${o.horizon} generated tokens`);
    prompts = defaultPrompts(model, { count: o.count, length: ctx - o.horizon, seedTokens: 8, seed: o.seed, set: 'heldout', source: o.idPrompts ? 'ids' : 'auto' });
  }
  const over = prompts.find((p) => p.tokens.length + o.horizon - 1 > model.hp.nCtxTrain);
  if (over) throw new ArgumentError(`prompt ${over.id}: ${over.tokens.length} + ${o.horizon} tokens exceed the model's context ${model.hp.nCtxTrain}`);
  const arms: EvalArm[] = o.kv.split(',').map((s) => s.trim()).filter(Boolean).map((name) => ({ name, policy: schemePolicy(name, regionsFromFlags(o)) }));
  if (arms.length === 0) throw new ArgumentError('--kv: no schemes');
  const t0 = performance.now();
  const { ref, path, reused } = loadOrComputeReference(model, { model: modelSha256(o.model), policy: REFERENCE_POLICY, horizon: o.horizon, prompts }, o.refCache);
  const shape = { layers: model.hp.nLayer, kvHeads: model.hp.nHeadKv, headDim: model.hp.headDim };
  const scores = arms.map((arm) => scoreArm(ref, arm, runArm(model, ref, arm), shape, HORIZONS));
  const secs = (performance.now() - t0) / 1000;
  if (o.json) {
    console.log(JSON.stringify({ model: o.model, reference: { path, reused, policy: REFERENCE_POLICY }, prompts: prompts.map((p) => ({ id: p.id, tokens: p.tokens.length })), horizon: o.horizon, window, sinks, scores }));
    return;
  }
  console.log(`reference: f16 cache, ${reused ? 'reused' : 'computed and stored'} ${path}`);
  const kind = o.prompts ? o.prompts : model.tokenizer && !o.idPrompts ? 'held-out story openings + greedy text' : 'seeded ids + greedy text';
  console.log(`${prompts.length} prompts (${kind}; ${prompts.map((p) => p.tokens.length).join('/')} tokens) + ${o.horizon} greedy tokens; ${windowLabel(window)}, sinks ${sinks} over lossy schemes; ${secs.toFixed(1)} s\n`);
  console.log(evalTable(scores, HORIZONS).join('\n'));
  const padded = paddingNote(model, arms.map((a) => a.policy));
  if (padded) console.log(`\n${padded}`);
}

