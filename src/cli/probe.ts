// `kvpack probe -m MODEL [--scheme q2k] [--budget BITS] [--out policy.json]`: per-layer sensitivity (seed 002)
// and a CachePolicy protecting the most sensitive layers within an effective-bit budget.
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import type { AnchorPrecision } from '../cache/policy.js';
import { DEFAULT_EVAL_CTX } from '../cache/defaults.js';
import { loadModel } from '../model/model.js';
import { runProbe, probeTable } from '../lab/probe.js';
import { defaultPrompts, readPromptsFile } from '../lab/prompts.js';
import { intArg, numArg } from './args.js';
import { paddingNote } from './padding-note.js';
import { PROBE_POLICY_KIND, type ProbePolicyFile } from '../lab/policy-file.js';

interface ProbeOpts {
  model: string;
  scheme: string;
  budget?: number;
  protect: string;
  anchors: number;
  anchorPrecision: string;
  prompts?: string;
  count: number;
  length: number;
  out?: string;
  ctxSize?: number;
  horizon: number;
  idPrompts?: boolean;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('probe')
    .description('per-layer logit drift when only that layer is quantized / kept exact; writes a protecting CachePolicy')
    .requiredOption('-m, --model <path>', 'model file (.gguf or llama2.c .bin)')
    .option('--scheme <name>', 'scheme to probe', 'q2k')
    .option('--budget <bits>', 'effective bits per K/V element the policy may use (default: protect the top layer only)', numArg('--budget', 0, 64))
    .option('--protect <how>', 'exact (f16 layers) | anchors (decode anchors on those layers)', 'exact')
    .option('--anchors <n>', 'anchor count with --protect anchors', intArg('--anchors', 1), 32)
    .option('--anchor-precision <p>', 'f16 | int8 | int4', 'f16')
    .option('--prompts <file>', 'JSON lines of probe sequences (token ids or text)')
    .option('--id-prompts', 'default sequences from seeded random ids even when the model has a tokenizer')
    .option('--count <n>', 'default sequences (calibration story openings with a tokenizer, never the eval set)', intArg('--count', 1), 2)
    .option('--length <n>', 'default sequence length', intArg('--length', 10), 64)
    .option('-c, --ctx-size <n>', "the eval's context the budget is measured at: positions held = ctx - 1 (default min(256, the model's))", intArg('-c', 2))
    .option('--horizon <n>', "the eval's greedy tokens: prompt = ctx - horizon, anchors after it", intArg('--horizon', 1), 100)
    .option('--out <file>', 'write the policy file here (`kvpack eval --policy FILE` reads it)')
    .option('--json', 'print the whole result as JSON')
    .action((o: ProbeOpts) => probeCommand(o));
}

function probeCommand(o: ProbeOpts): void {
  if (o.protect !== 'exact' && o.protect !== 'anchors') throw new ArgumentError(`--protect must be exact or anchors, got ${o.protect}`);
  if (!['f16', 'int8', 'int4'].includes(o.anchorPrecision)) throw new ArgumentError(`--anchor-precision must be f16, int8 or int4, got ${o.anchorPrecision}`);
  const model = loadModel(o.model);
  const sequences = o.prompts
    ? readPromptsFile(o.prompts, model)
    : defaultPrompts(model, { count: o.count, length: o.length, seedTokens: 8, seed: 1, set: 'calibration', source: o.idPrompts ? 'ids' : 'auto' });
  const ctx = o.ctxSize ?? Math.min(DEFAULT_EVAL_CTX, model.hp.nCtxTrain);
  if (o.horizon >= ctx) throw new ArgumentError(`--horizon ${o.horizon} leaves no prompt in -c ${ctx}`);
  // As `kvpack eval` holds them: prompt = ctx - horizon tokens, then horizon - 1 decoded positions.
  const budgetAt = { positions: ctx - 1, prompt: ctx - o.horizon };
  const r = runProbe(model, {
    scheme: o.scheme,
    sequences,
    budgetBits: o.budget,
    budgetAt,
    protect: o.protect,
    anchors: { count: o.anchors, precision: o.anchorPrecision as AnchorPrecision },
  });
  if (o.out) {
    const file: ProbePolicyFile = {
      kind: PROBE_POLICY_KIND,
      scheme: o.scheme,
      protect: o.protect as 'exact' | 'anchors',
      protectedLayers: r.protectedLayers,
      budgetAt,
      budgetBits: o.budget ?? null,
      effectiveBits: r.effectiveBits,
      policy: r.policy,
    };
    writeFileSync(o.out, JSON.stringify(file, null, 2) + '\n');
  }
  if (o.json) {
    console.log(JSON.stringify(r));
  } else {
    const kind = o.prompts ?? (model.tokenizer && !o.idPrompts ? 'calibration story openings + greedy text (never the eval set)' : 'seeded ids + greedy text');
    console.log(`${sequences.length} probe sequences (${kind}; ${sequences.map((p) => p.tokens.length).join('/')} tokens)\n`);
    console.log(probeTable(r).join('\n'));
    console.log(`\nranking (most sensitive first): ${r.ranking.join(', ')}; protected (${o.protect}): ${r.protectedLayers.join(', ') || 'none'}`);
    console.log(
      `effective bits at ${r.ctx} positions (prompt ${r.prompt}, as \`kvpack eval -c ${ctx} --horizon ${o.horizon}\` holds them): ${r.effectiveBits.toFixed(3)} (bare ${o.scheme}: ${r.schemeBits.toFixed(3)})${o.budget !== undefined ? `, budget ${o.budget}` : ''}`,
    );
    const padded = paddingNote(model, [r.policy]);
    if (padded) console.log(padded);
    const bad = r.controls.filter((c) => !c.pass);
    console.log(
      `negative control (stored K/V read back in ${r.controls.length} configurations): ${bad.length === 0 ? 'PASS' : `FAIL in ${bad.map((c) => c.config).join('; ')}`}`,
    );
    console.log(
      `${(r.ms / 1000).toFixed(1)} s${o.out ? `; wrote ${o.out} (score it: kvpack eval -m ${o.model} -c ${ctx} --horizon ${o.horizon} --kv ${o.scheme} --kv-window 0 --sinks 0 --policy ${o.out})` : ''}`,
    );
  }
  if (!r.controlsPass) process.exitCode = 1;
}
