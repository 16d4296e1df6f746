// `kvpack eval -m MODEL --kv f16,q8_0,q4_0,q2k`: one table per run of every scheme vs the f16-cache reference
// (KL, top-1, PPL delta, exact-match at 50/100, bytes, effective bits, tokens/s).
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import { schemePolicy } from '../cache/schemes.js';
import { DEFAULT_EVAL_CTX } from '../cache/defaults.js';
import { windowLabel } from '../cache/exact-from.js';
import { loadModel } from '../model/model.js';
import { runArm, scoreArm, evalTable, intervalNote, type EvalArm } from '../lab/eval.js';
import { defaultPrompts, readPromptsFile } from '../lab/prompts.js';
import type { EvalPrompt } from '../lab/reference-logits.js';
import { loadOrComputeReference, modelSha256, REFERENCE_POLICY } from '../lab/reference-logits.js';
import { intArg, intListArg } from './args.js';
import { readPolicyFile } from '../lab/policy-file.js';
import type { AnchorPrecision, CachePolicy } from '../cache/policy.js';
import { planLayers } from '../cache/policy.js';
import { paddingNote } from './padding-note.js';
import { addRegionFlags, regionsFromFlags, type RegionFlags } from './cache-flags.js';
import { DEFAULT_SINKS, DEFAULT_WINDOW } from '../cache/defaults.js';

interface EvalOpts extends RegionFlags {
  model: string;
  kv: string;
  policy?: string[];
  anchors?: number;
  anchorLayers?: number[];
  anchorPrecision?: string;
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

/** An arm's name: the scheme plus what the anchor flags added to it. */
function schemeName(scheme: string, suffix: string): string {
  return scheme + suffix;
}

export function register(program: Command): void {
  const cmd = program
    .command('eval')
    .description('score cache schemes against the f16-cache reference (stored once, reused): one table')
    .requiredOption('-m, --model <path>', 'model file (.gguf or llama2.c .bin)')
    .option('--kv <list>', 'comma-separated schemes (see `kvpack memory`); "" with --policy for policy files only', 'f16,q8_0,q4_0,q2k')
    .option('--policy <file...>', 'also score these policy files (what `kvpack probe --out` writes, or any CachePolicy JSON)')
    .option('--anchors <n>', 'decode anchors on the --kv schemes: first N generated positions kept exact', intArg('--anchors', 0))
    .option('--anchor-layers <list>', 'layers keeping the anchors (default all)', intListArg('--anchor-layers', 0))
    .option('--anchor-precision <p>', 'anchor precision: f16 | int8 | int4 (default f16)')
    .option('--prompts <file>', 'JSON lines: token ids ([1,2,3] or {"tokens": [...]}) or text ("..." or {"text": "..."})')
    .option('--id-prompts', 'default prompts from seeded random ids even when the model has a tokenizer (id-level work)')
    .option(
      '-c, --ctx-size <n>',
      "positions per measured sequence, not a cache size like run's -c: default prompts get ctx - horizon tokens (default min(256, training context))",
      intArg('-c', 2),
    )
    .option('--horizon <n>', 'greedy tokens per prompt (exact-match at 50 and 100 where the horizon reaches; n/a beyond)', intArg('--horizon', 1), 100)
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
  const ctx = o.ctxSize ?? Math.min(DEFAULT_EVAL_CTX, model.hp.nCtxTrain);
  let prompts: EvalPrompt[];
  if (o.prompts) prompts = readPromptsFile(o.prompts, model);
  else {
    if (ctx <= o.horizon + 9) throw new ArgumentError(`-c ${ctx} leaves no room for a prompt before ${o.horizon} generated tokens`);
    prompts = defaultPrompts(model, {
      count: o.count,
      length: ctx - o.horizon,
      seedTokens: 8,
      seed: o.seed,
      set: 'heldout',
      source: o.idPrompts ? 'ids' : 'auto',
    });
  }
  const over = prompts.find((p) => p.tokens.length + o.horizon - 1 > model.hp.nCtxTrain);
  if (over) throw new ArgumentError(`prompt ${over.id}: ${over.tokens.length} + ${o.horizon} tokens exceed the model's context ${model.hp.nCtxTrain}`);
  const extra: Partial<CachePolicy> = regionsFromFlags(o);
  if (o.anchors !== undefined) {
    if (o.anchorPrecision !== undefined && !['f16', 'int8', 'int4'].includes(o.anchorPrecision))
      throw new ArgumentError(`--anchor-precision must be f16, int8 or int4, got ${o.anchorPrecision}`);
    extra.anchors = { count: o.anchors, layers: o.anchorLayers ?? 'all', precision: (o.anchorPrecision ?? 'f16') as AnchorPrecision };
  } else if (o.anchorLayers || o.anchorPrecision) throw new ArgumentError('--anchor-layers/--anchor-precision need --anchors N');
  const suffix = o.anchors !== undefined ? `+a${o.anchors}${o.anchorLayers ? `@${o.anchorLayers.join('.')}` : ''}` : '';
  const arms: EvalArm[] = o.kv
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((name) => ({ name: schemeName(name, suffix), policy: schemePolicy(name, extra) }));
  const files = (o.policy ?? []).map((f) => readPolicyFile(f, model.hp.nLayer));
  for (const f of files) arms.push({ name: f.name, policy: f.policy });
  if (arms.length === 0) throw new ArgumentError('--kv/--policy: no schemes or policies');
  if (new Set(arms.map((a) => a.name)).size !== arms.length) throw new ArgumentError('--kv/--policy: two arms share a name');
  for (const a of arms) planLayers(a.policy, model.hp.nLayer, ctx);
  const t0 = performance.now();
  const { ref, path, reused } = loadOrComputeReference(
    model,
    { model: modelSha256(o.model), policy: REFERENCE_POLICY, horizon: o.horizon, prompts },
    o.refCache,
  );
  const shape = { layers: model.hp.nLayer, kvHeads: model.hp.nHeadKv, headDim: model.hp.headDim };
  const scores = arms.map((arm) => scoreArm(ref, arm, runArm(model, ref, arm), shape, HORIZONS));
  const secs = (performance.now() - t0) / 1000;
  if (o.json) {
    console.log(
      JSON.stringify({
        model: o.model,
        reference: { path, reused, policy: REFERENCE_POLICY },
        prompts: prompts.map((p) => ({ id: p.id, tokens: p.tokens.length })),
        horizon: o.horizon,
        window,
        sinks,
        scores,
      }),
    );
    return;
  }
  console.log(`reference: f16 cache, ${reused ? 'reused' : 'computed and stored'} ${path}`);
  const kind = o.prompts ? o.prompts : model.tokenizer && !o.idPrompts ? 'held-out story openings + greedy text' : 'seeded ids + greedy text';
  console.log(
    `${prompts.length} prompts (${kind}; ${prompts.map((p) => p.tokens.length).join('/')} tokens) + ${o.horizon} greedy tokens; ${windowLabel(window)}${window > 0 ? ' (the last W positions read exact f16; on a short prompt most positions are window: see bulk bits vs eff. bits)' : ''}, sinks ${sinks} over lossy schemes (policy files carry their own); ${secs.toFixed(1)} s\n`,
  );
  console.log(evalTable(scores, HORIZONS).join('\n'));
  console.log(`\n${intervalNote(scores).join('\n')}`);
  const staged = scores.filter((s) => (s.stagedPositions ?? 0) > 0);
  if (staged.length)
    console.log(
      `staged: ${staged.map((s) => `${s.arm} ${s.stagedPositions}`).join(', ')} positions per layer still in f32 staging at the end (per-channel groups of 32 encode when full: up to 31 latest positions read exact${window === 0 ? ', even with window 0' : ''})`,
    );
  for (const f of files)
    if (f.probe)
      console.log(
        `${f.name}: probe chose layers ${f.probe.protectedLayers.join(',') || 'none'} (${f.probe.protect}) for ${f.probe.budgetAt.positions} positions (prompt ${f.probe.budgetAt.prompt}): ${f.probe.effectiveBits.toFixed(3)} bits by the formula; measured here in eff. bits`,
      );
  const padded = paddingNote(
    model,
    arms.map((a) => a.policy),
  );
  if (padded) console.log(`\n${padded}`);
}
