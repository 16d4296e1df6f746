// `kvpack run`: load a model, prefill a prompt, generate with a compressed KV cache (llama.cpp-like flags).
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import { defaultCapacity } from '../cache/defaults.js';
import { loadModel } from '../model/model.js';
import { generate, PREFILL_CHUNK } from '../model/generate.js';
import { intArg, intListArg } from './args.js';
import { addCacheFlags, attentionFromFlags, policyFromFlags, type CacheFlags } from './cache-flags.js';
import { addThreadsFlag, applyThreads, type ThreadsFlag } from './threads-flag.js';
import { addSamplingFlags, samplerFromFlags, type SamplingFlags } from './sampling-flags.js';

interface RunOpts extends CacheFlags, ThreadsFlag, SamplingFlags {
  model: string;
  prompt?: string;
  tokens?: number[];
  nPredict: number;
  ctxSize?: number;
  json?: boolean;
}

export function register(program: Command): void {
  const cmd = program
    .command('run')
    .description('generate text with a GGUF or llama2.c model over a compressed KV cache')
    .requiredOption('-m, --model <path>', 'model file (.gguf or llama2.c .bin) or Hugging Face directory')
    .option('-p, --prompt <text>', 'prompt text (needs a model with a tokenizer)')
    .option('--tokens <ids>', 'prompt as comma-separated token ids', intListArg('--tokens', 0))
    .option('-n, --n-predict <n>', 'tokens to generate', intArg('-n', 0), 64);
  addSamplingFlags(addThreadsFlag(addCacheFlags(cmd)))
    .option(
      '-c, --ctx-size <n>',
      'cache capacity in positions (default: the training context capped at 4096, raised to prompt + n up to the training context)',
      intArg('-c', 1),
    )
    .option('--json', 'print ids, text, tokens/s and cache bytes as JSON')
    .action((o: RunOpts) => runCommand(o));
}

function runCommand(o: RunOpts): void {
  if ((o.prompt === undefined) === (o.tokens === undefined)) throw new ArgumentError('give exactly one of -p PROMPT or --tokens 1,2,3');
  const policy = policyFromFlags(o);
  const attention = attentionFromFlags(o);
  applyThreads(o);
  const model = loadModel(o.model);
  let prompt: number[];
  if (o.prompt !== undefined) {
    if (!model.tokenizer) throw new ArgumentError(`${o.model}: ${model.tokenizerProblem ?? 'no tokenizer'}; give the prompt as ids with --tokens 1,2,3`);
    prompt = model.tokenizer.encode(o.prompt);
  } else {
    prompt = o.tokens!;
  }
  if (prompt.length === 0) throw new ArgumentError('the prompt is empty (no tokens)');
  const need = prompt.length + o.nPredict;
  const capacity = o.ctxSize ?? defaultCapacity(model.hp.nCtxTrain, need);
  if (need > capacity) throw new ArgumentError(`-c ${capacity} is too small for ${prompt.length} prompt + ${o.nPredict} generated tokens`);
  const cache = model.createCache({ policy, capacity, attention });

  // A progress bar for long prompts, on stderr so stdout stays the generated text.
  // (cli-progress ships no types; one rewritten stderr line does the job.)
  const showBar = !o.json && prompt.length > 2 * PREFILL_CHUNK && process.stderr.isTTY;
  const progress = (done: number) => {
    if (showBar) process.stderr.write(`\rprefill ${done}/${prompt.length} tokens${done === prompt.length ? '\n' : ''}`);
  };
  const streamOut = !o.json;
  const r = generate(model, cache, prompt, {
    maxTokens: o.nPredict,
    sampler: samplerFromFlags(o),
    stop: o.stop.filter((x) => x !== ''),
    onPrefill: progress,
    onText: (text, ids) => {
      if (!streamOut) return;
      process.stdout.write(model.tokenizer ? text : ids.map((id) => `${id} `).join(''));
    },
  });
  const bytes = cache.nbytes();
  if (o.json) {
    console.log(
      JSON.stringify({
        model: o.model,
        arch: model.hp.arch,
        policy,
        attention: { q: attention.q ?? 'f32', v: attention.v ?? 'f32' },
        promptTokens: r.prompt,
        tokens: r.tokens,
        text: r.text,
        stopReason: r.stopReason,
        prefill: { tokens: r.prompt.length, ms: r.prefillMs, tokensPerSecond: r.prefillTps },
        decode: { tokens: r.tokens.length, ms: r.decodeMs, tokensPerSecond: r.decodeTps },
        cacheBytes: bytes,
      }),
    );
  } else {
    process.stdout.write('\n');
    console.error(
      `prefill ${r.prompt.length} tokens ${r.prefillMs.toFixed(1)} ms (${r.prefillTps.toFixed(1)} tok/s); ` +
        `decode ${r.tokens.length} tokens ${r.decodeMs.toFixed(1)} ms (${r.decodeTps.toFixed(1)} tok/s); ` +
        `KV cache ${bytes.total} B (${policy.k}/${policy.v}${attention.q || attention.v ? `; attention q ${attention.q ?? 'f32'} v ${attention.v ?? 'f32'}` : ''}); stop: ${r.stopReason}`,
    );
  }
  cache.dispose();
}
