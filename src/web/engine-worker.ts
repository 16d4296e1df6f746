// The page's engine, in a dedicated Worker: loading and generation block (synchronous reads, Atomics.wait
// in the pool), which a page's main thread may not do. Loads a GGUF from a URL (HTTP Range) or a picked
// File, or a Hugging Face directory the server lists or the user picked; generates greedily over a cache of the chosen scheme and posts each token with tokens/s and the
// cache's bytes per region; compare mode runs f16 first, then the scheme, on the same prompt.
import {
  blobFiles,
  blobSource,
  coreCount,
  generate,
  kvBytes,
  loadHfModelFrom,
  loadModelFrom,
  poolFailure,
  poolStats,
  startThreads,
  urlFiles,
  urlSource,
  type KvCache,
  type Model,
} from '../browser.js';
import { ArgumentError } from '../errors.js';
import { defaultCapacity } from '../cache/defaults.js';
import { runGate, SMALL_GRID } from '../parity/gate.js';
import { firstDivergence } from './divergence.js';
import { pagePolicy } from './settings.js';
import type { CacheReadout, EngineEvent, EngineRequest, ModelRef } from './protocol.js';

const post = (e: EngineEvent): void => postMessage(e);

let loaded: { key: string; model: Model } | null = null;

addEventListener('message', (e) => {
  handle((e as MessageEvent<EngineRequest>).data).catch((err: unknown) => post({ type: 'error', message: err instanceof Error ? err.message : String(err) }));
});

async function handle(req: EngineRequest): Promise<void> {
  if (req.type === 'check') return check();
  const wanted = req.threads || coreCount();
  const threads = await startThreads(wanted);
  post({ type: 'threads', threads, wanted, note: threads < wanted ? poolFailure() || 'the pool did not start' : '' });
  const model = load(req.source);
  if (!model.tokenizer) throw new ArgumentError(`${req.source.name}: ${model.tokenizerProblem ?? 'no tokenizer'}`);
  const prompt = model.tokenizer.encode(req.prompt);
  if (prompt.length === 0) throw new ArgumentError('the prompt is empty (no tokens)');
  const need = prompt.length + req.n;
  // `kvpack run`'s default (cache/defaults.ts); the page has no -c to go past the training context.
  const capacity = defaultCapacity(model.hp.nCtxTrain, need);
  const arms = req.compare ? ['f16', req.scheme] : [req.scheme];
  const ids: number[][] = [];
  for (const [arm, scheme] of arms.entries()) {
    post({ type: 'arm', arm, scheme, promptTokens: prompt.length });
    const cache = model.createCache({ policy: pagePolicy(req, scheme), capacity });
    try {
      let first = 0;
      const r = generate(model, cache, prompt, {
        maxTokens: req.n,
        sampler: { temperature: 0 },
        onText: (text, released) => {
          const now = performance.now();
          if (first === 0) first = now;
          // Text comes out once no stop string can claim it; each id is posted with the text it begins.
          released.forEach((id, k) => {
            const index = ids[arm]?.length ?? 0;
            (ids[arm] ??= []).push(id);
            // The first token comes from the prompt's logits; each later one costs one decode step.
            post({ type: 'token', arm, index, id, text: k === 0 ? text : '', tps: index > 0 ? index / ((now - first) / 1000) : 0, ...readout(model, cache) });
          });
        },
      });
      ids[arm] = r.tokens;
      post({
        type: 'end',
        arm,
        scheme,
        ids: r.tokens,
        text: r.text,
        stopReason: r.stopReason,
        prefillTps: r.prefillTps,
        decodeTps: r.decodeTps,
        ...readout(model, cache),
      });
    } finally {
      cache.dispose();
    }
  }
  post({ type: 'done', divergence: req.compare ? firstDivergence(ids[0]!, ids[1]!) : null, pool: poolStats() });
}

/** Identifies what `ref` reads: a run on the same one reuses the loaded model. */
function refKey(ref: ModelRef): string {
  const picked = (f: File) => `${f.name}:${f.size}:${f.lastModified}`;
  if ('url' in ref) return `url:${ref.url}`;
  if ('dir' in ref) return `dir:${ref.dir}`;
  if ('file' in ref) return `file:${picked(ref.file)}`;
  return `picked:${ref.picked.map((p) => `${p.path}:${p.file instanceof File ? picked(p.file) : p.file.size}`).join('|')}`;
}

function open(ref: ModelRef): Model {
  if ('url' in ref) return loadModelFrom(urlSource(ref.url, ref.name));
  if ('file' in ref) return loadModelFrom(blobSource(ref.file, ref.name));
  if ('dir' in ref) return loadHfModelFrom(urlFiles(ref.dir, ref.files, ref.name));
  return loadHfModelFrom(blobFiles(ref.picked, ref.name));
}

/** The model for `ref`, loaded once per source. */
function load(ref: ModelRef): Model {
  const key = refKey(ref);
  if (loaded?.key === key) return loaded.model;
  post({ type: 'status', text: `loading ${ref.name}...` });
  const t0 = performance.now();
  const model = open(ref);
  loaded = { key, model };
  const hp = model.hp;
  post({
    type: 'loaded',
    info: {
      name: ref.name,
      arch: hp.arch,
      layers: hp.nLayer,
      kvHeads: hp.nHeadKv,
      headDim: hp.headDim,
      nCtxTrain: hp.nCtxTrain,
      vocab: hp.nVocab,
      weightBytes: model.weightBytes,
      loadMs: performance.now() - t0,
    },
  });
  return model;
}

/** The cache's bytes now, and what every held position would take in f16. */
function readout(model: Model, cache: KvCache): CacheReadout {
  const hp = model.hp;
  const positions = cache.length;
  const shape = { ctx: positions, layers: hp.nLayer, kvHeads: hp.nHeadKv, headDim: hp.headDim };
  return {
    bytes: cache.nbytes(),
    f16Bytes: kvBytes({ ...shape, policy: { k: 'f16', v: 'f16', window: 0, sinks: 0 } }).total,
    positions,
    values: positions * hp.nLayer * hp.nHeadKv * hp.headDim * 2,
  };
}

/** The parity gate with every core's worker started, as runs use them. */
async function check(): Promise<void> {
  await startThreads(coreCount());
  post({ type: 'status', text: 'checking every kernel against the reference (parity gate, small grid)...' });
  const r = runGate(SMALL_GRID, () => {});
  post({ type: 'check', passed: r.passed, failed: r.failed, fallback: r.fallback, failures: r.failures });
}
