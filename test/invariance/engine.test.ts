// One request, one answer: the same tokens give bit-identical logits whatever way they reach the cache:
// prefill batches of 1 (token-by-token decode), 7, 32, 128, 512; 1 or 2 threads; a saved and restored cache
// file; a fork (also of a frozen prefix-cache entry); a rewind and re-append. Negative control: the old
// batch-dependent window (every query of a batch read with the last one's bound) must break it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvCache } from '../../src/cache/kvcache.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import type { CachePolicy } from '../../src/cache/policy.js';
import { batchDependentWindowForTests } from '../../src/cache/layer.js';
import { loadModel, modelFromLoaded, type Model } from '../../src/model/model.js';
import { modelFromGguf } from '../../src/gguf/model.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { encodeGguf } from '../../src/gguf/writer.js';
import { configureMatmul, matmulConfig } from '../../src/kernels/matmul/config.js';
import { getThreads, setThreads } from '../../src/kernels/runtime/pool.js';
import { wasmFailure } from '../../src/kernels/runtime/wasm.js';
import { ggmlTypeByName } from '../../src/gguf/types.js';
import { Prng } from '../../src/numeric/prng.js';
import { tinyLlama } from '../fixtures/tiny.js';
import { repoRoot } from '../paths.js';

const PROMPT = 320;
const MORE = 40;
const UBATCHES = [1, 7, 32, 128, 512];

/** Every scheme family, with anchors on layer 0 (they fill during the continuation after beginDecode). */
const SCHEMES = ['f16', 'q8_0', 'q4_0', 'q2k', 'nf4', 'tern'];
const policyOf = (scheme: string, windowMode: 'overlay' | 'residual' = 'overlay'): CachePolicy =>
  schemePolicy(scheme, { window: 24, sinks: 4, windowMode, anchors: { count: 8, layers: [0], precision: 'int8' } });

function tokensOf(m: Model, n: number): number[] {
  const rng = new Prng(5);
  return Array.from({ length: n }, () => 3 + rng.int(m.nVocab - 3));
}

/** Logits of every position [n, vocab] for tokens[from, to) fed in batches of ub. */
function feed(m: Model, cache: KvCache, tokens: readonly number[], from: number, to: number, ub: number): Float32Array[] {
  const out: Float32Array[] = [];
  for (let s = from; s < to; s += ub) out.push(m.forward(tokens.slice(s, Math.min(to, s + ub)), cache, { allLogits: true }));
  return out;
}

const cat = (xs: Float32Array[]): Float32Array => {
  const out = new Float32Array(xs.reduce((n, x) => n + x.length, 0));
  let o = 0;
  for (const x of xs) {
    out.set(x, o);
    o += x.length;
  }
  return out;
};

/** The prompt in batches of ub, beginDecode, the continuation in batches of ub: all logits, and the cache. */
function runOnce(m: Model, policy: CachePolicy, tokens: readonly number[], ub: number): { logits: Float32Array; cache: KvCache } {
  const cache = m.createCache({ policy, capacity: PROMPT + MORE, chunkTokens: 64 });
  const a = feed(m, cache, tokens, 0, PROMPT, ub);
  cache.beginDecode();
  const b = feed(m, cache, tokens, PROMPT, PROMPT + MORE, ub);
  return { logits: cat([...a, ...b]), cache };
}

/** Index of the first differing position (vocab-sized rows), -1 when bit-identical. */
function firstDiff(a: Float32Array, b: Float32Array, vocab: number): number {
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return Math.floor(i / vocab);
  return -1;
}

function withThreads<T>(n: number, fn: () => T): T {
  const before = { pool: getThreads(), matmul: matmulConfig().threads };
  configureMatmul({ threads: n });
  setThreads(n);
  try {
    return fn();
  } finally {
    configureMatmul({ threads: before.matmul });
    setThreads(before.pool);
  }
}

/** The suite on one model: throws (assert) on the first variant whose logits differ from the reference. */
function suite(m: Model, scheme: string, windowMode: 'overlay' | 'residual', full: boolean): void {
  const policy = policyOf(scheme, windowMode);
  const V = m.nVocab;
  const tokens = tokensOf(m, PROMPT + MORE);
  const ref = withThreads(1, () => runOnce(m, policy, tokens, 512));
  const where = `${scheme} ${windowMode}`;
  const same = (got: Float32Array, what: string, offset = 0) => {
    const at = firstDiff(got, ref.logits.subarray(offset * V, offset * V + got.length), V);
    assert.equal(at, -1, `${where}: ${what} differs at position ${offset + at}`);
  };
  for (const ub of full ? UBATCHES : [1, 7, 128]) {
    for (const threads of [1, 2]) {
      // Token by token on 2 threads only in the full run: n = 1 calls are the slowest and the 7/128 runs cover threads.
      if (threads > 1 && (getThreads() < 2 || (ub === 1 && !full))) continue;
      const r = withThreads(threads, () => runOnce(m, policy, tokens, ub));
      same(r.logits, `-ub ${ub}, ${threads} thread(s)`);
      r.cache.dispose();
    }
  }
  // Saved half-way through the prompt, restored, continued (decode anchors included).
  const half = PROMPT / 2 + 3;
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-invariance-'));
  const a = m.createCache({ policy, capacity: PROMPT + MORE, chunkTokens: 64 });
  feed(m, a, tokens, 0, half, 32);
  a.save(join(dir, 'half.kvc'));
  const back = KvCache.restore(join(dir, 'half.kvc'));
  const cont = (c: KvCache) => {
    const x = feed(m, c, tokens, half, PROMPT, 7);
    c.beginDecode();
    return cat([...x, ...feed(m, c, tokens, PROMPT, PROMPT + MORE, 1)]);
  };
  same(cont(back), 'restored cache file', half);
  // A fork, and a fork of a frozen snapshot (a prefix-cache entry), continued.
  const entry = a.fork();
  entry.freeze();
  assert.ok(entry.resumableAt(half) && entry.resumableAt(half - 1), `${where}: a frozen entry resumes at n and n - 1`);
  const fromEntry = entry.fork();
  same(cont(fromEntry), 'fork of a frozen entry', half);
  const fork = a.fork();
  same(cont(fork), 'fork', half);
  // Rewound where resumable (n - 1) and re-appended; the rows a deeper rewind needs are gone.
  same(cont(a), 'the source itself', half);
  const n = a.length;
  assert.ok(a.resumableAt(n) && a.resumableAt(n - 1));
  if (scheme !== 'f16') assert.equal(a.resumableAt(n - 40), false, `${where}: a ring of W rows cannot resume 40 back`);
  a.rewind(n - 1);
  same(cat(feed(m, a, tokens, n - 1, n, 1)), 'rewind + re-append', n - 1);
  for (const c of [a, back, entry, fromEntry, fork, ref.cache]) c.dispose();
}

const SYNTH = modelFromLoaded(
  modelFromGguf(parseGguf(encodeGguf(tinyLlama({ weightType: 'q8_0', layers: 2, dim: 64, heads: 4, kvHeads: 2, ctx: 512, vocab: 320 })))),
);
const skipWasm = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

for (const scheme of SCHEMES) {
  test(`synthetic q8_0 llama, ${scheme}: logits bit-identical across -ub, threads, restore, fork, rewind`, { skip: skipWasm }, () => {
    for (const windowMode of ['overlay', 'residual'] as const) suite(SYNTH, scheme, windowMode, true);
  });
}

test('negative control: the old batch-dependent window breaks the suite', { skip: skipWasm }, () => {
  batchDependentWindowForTests.on = true;
  try {
    assert.throws(() => suite(SYNTH, 'q4_0', 'overlay', false), /-ub \d+, \d thread\(s\) differs at position/);
  } finally {
    batchDependentWindowForTests.on = false;
  }
  assert.doesNotThrow(() => suite(SYNTH, 'q4_0', 'overlay', false));
});

const SHARED = join(repoRoot, '..', 'shared', 'models');
// The 6-layer pydoc model costs ~5x the 2-layer TinyStories one per token: three schemes there (exact,
// token-axis, per-channel), every scheme on TinyStories; -ub 32 and 512 on 2 threads for q2k only.
for (const [file, schemes] of [
  ['pydoc-6.8m.gguf', ['f16', 'q4_0', 'q2k']],
  ['tinystories-656k.gguf', SCHEMES],
] as const) {
  const path = join(SHARED, file);
  const skip = skipWasm || (existsSync(path) ? false : `${path} not present`);
  test(`${file}: logits bit-identical across -ub, threads, restore, fork, rewind (${schemes.join(', ')})`, { skip }, () => {
    const m = loadModel(path);
    for (const scheme of schemes) suite(m, scheme, 'overlay', scheme === 'q2k');
  });
}

// Weights rearranged at load into a kernel layout (q8_0 -> q8_0x4, q5_1 -> q5_1g4 in every build; q4_0 -> q4_0x4 in
// relaxed builds, q4_0g4 in baseline ones) give the file layout's logits bit for bit, prefill and decode; the check
// first asserts the layout really changed.
for (const weightType of ['q8_0', 'q4_0', 'q5_1'] as const) {
  test(`synthetic ${weightType} llama: logits bit-identical with weights repacked at load and in their file layout`, { skip: skipWasm }, () => {
    const bytes = encodeGguf(tinyLlama({ weightType, layers: 2, dim: 64, heads: 4, kvHeads: 2, ctx: 512, vocab: 320, separateOutput: true }));
    const load = (repack: boolean) => {
      configureMatmul({ repack });
      try {
        return modelFromLoaded(modelFromGguf(parseGguf(bytes)));
      } finally {
        configureMatmul({ repack: true });
      }
    };
    const file = load(false);
    const packed = load(true);
    const typeOf = (m: Model) => m.layers[0]!.wGate.packedWeight!.type;
    assert.equal(typeOf(file), ggmlTypeByName(weightType)!.id, 'repack off keeps the file layout');
    assert.notEqual(typeOf(packed), typeOf(file), `${weightType} weights were repacked`);
    const tokens = tokensOf(file, 72);
    const run = (m: Model) => {
      const cache = m.createCache({ policy: policyOf('q4_0'), capacity: 80 });
      const logits = cat([...feed(m, cache, tokens, 0, 64, 64), ...feed(m, cache, tokens, 64, 72, 1)]);
      cache.dispose();
      return logits;
    };
    assert.equal(firstDiff(run(packed), run(file), file.nVocab), -1, 'first differing position');
  });
}
