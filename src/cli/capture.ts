// `kvpack capture -m MODEL (-p PROMPT | --tokens ...) --layers 3,11 --out FILE`: dumps Q/K/V per layer (after
// RoPE) from the engine for the lab (`protocol run bit-allocation --capture FILE`).
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import { loadModel } from '../model/model.js';
import { captureModel } from '../lab/capture-model.js';
import { writeCapture } from '../lab/capture.js';
import { defaultPrompts } from '../lab/prompts.js';
import { modelSha256 } from '../lab/reference-logits.js';
import { intArg, intListArg } from './args.js';

interface CaptureOpts {
  model: string;
  prompt?: string;
  tokens?: number[];
  length?: number;
  layers: number[];
  out: string;
}

export function register(program: Command): void {
  program
    .command('capture')
    .description('dump Q/K/V of chosen layers from a model run (capture format, for protocol run --capture)')
    .requiredOption('-m, --model <path>', 'model file (.gguf or llama2.c .bin)')
    .option('-p, --prompt <text>', 'prompt text (needs a tokenizer)')
    .option('--tokens <ids>', 'prompt as comma-separated token ids', intListArg('--tokens', 0))
    .option(
      '--length <n>',
      'no prompt: a default prompt of n tokens (a held-out story opening, or seeded ids without a tokenizer, continued by the model)',
      intArg('--length', 10),
    )
    .requiredOption('--layers <list>', 'layers to dump, e.g. 3,11', intListArg('--layers', 0))
    .requiredOption('--out <file>', 'capture file to write')
    .action((o: CaptureOpts) => captureCommand(o));
}

function captureCommand(o: CaptureOpts): void {
  const given = [o.prompt, o.tokens, o.length].filter((x) => x !== undefined).length;
  if (given !== 1) throw new ArgumentError('give exactly one of -p PROMPT, --tokens 1,2,3 or --length N');
  const model = loadModel(o.model);
  let tokens: number[];
  let source: string;
  if (o.prompt !== undefined) {
    if (!model.tokenizer) throw new ArgumentError(`${o.model}: ${model.tokenizerProblem ?? 'no tokenizer'}; give --tokens or --length`);
    tokens = model.tokenizer.encode(o.prompt);
    source = o.prompt;
  } else if (o.tokens) {
    tokens = o.tokens;
    source = 'token ids';
  } else {
    tokens = [...defaultPrompts(model, { count: 1, length: o.length!, seedTokens: 8, seed: 1 })[0]!.tokens];
    source = `default prompt (${model.tokenizer ? 'a held-out story opening + greedy text' : 'seeded ids + greedy text'}, seed 1, ${o.length} tokens)`;
  }
  if (tokens.length > model.hp.nCtxTrain) throw new ArgumentError(`${tokens.length} tokens exceed the model's context ${model.hp.nCtxTrain}`);
  const t0 = performance.now();
  const cap = captureModel(model, tokens, o.layers, { model: basename(o.model), modelSha256: modelSha256(o.model), prompt: source });
  const bytes = writeCapture(cap);
  writeFileSync(o.out, bytes);
  console.log(
    `captured layers ${o.layers.join(', ')} over ${tokens.length} tokens (${model.hp.nHead} heads, ${model.hp.nHeadKv} kv heads x ${model.hp.headDim}) in ${(performance.now() - t0).toFixed(0)} ms; wrote ${o.out} (${bytes.length} B)`,
  );
}
