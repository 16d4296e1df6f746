// Every architecture on tiny random GGUF models: the forward pass runs, and prefill in one batch gives the
// same logits as feeding the tokens one by one (cache, masks, RoPE positions and sliding windows agree).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelFromLoaded, type Model } from '../../src/model/model.js';
import { UnknownArchitectureError } from '../../src/errors.js';
import type { CachePolicy } from '../../src/cache/policy.js';
import { TINY, TINY_SLIDING_WINDOW, tinyModel } from './tiny-models.js';
import { configureMatmul } from '../../src/kernels/matmul/config.js';

// Float-level agreement (1e-4, 1e-6) is the point here: pin f32 activations. The default q8 activations
// (llama.cpp's choice) round each activation block, so tiny input differences can flip a rounding.
configureMatmul({ activations: 'f32' });

const F32: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32' };
const ARCHS = ['llama', 'qwen2', 'qwen3', 'gemma3'] as const;
/** float32 matmuls in another batch shape, attention kernels for decode vs prefill: differences ~1e-6. */
const BATCH_TOL = 1e-4;

function tokens(n: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => (i * 37 + seed * 11 + 5) % TINY.vocab);
}

function maxRelDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(a[i]!));
  }
  return m / scale;
}

function batchVsSteps(model: Model, toks: number[]): number {
  const batch = model.createCache({ policy: F32, capacity: 256 });
  const all = model.forward(toks, batch, { allLogits: true });
  const step = model.createCache({ policy: F32, capacity: 256 });
  let worst = 0;
  toks.forEach((t, i) => {
    const one = model.forward([t], step);
    worst = Math.max(worst, maxRelDiff(all.subarray(i * TINY.vocab, (i + 1) * TINY.vocab), one));
  });
  assert.equal(batch.length, toks.length);
  batch.dispose();
  step.dispose();
  return worst;
}

for (const arch of ARCHS) {
  for (const quant of [undefined, 'q8_0'] as const) {
    test(`${arch}${quant ? ` (${quant} weights)` : ''}: prefill in one batch == token by token`, () => {
      const model = modelFromLoaded(tinyModel(arch, { quant }), { expand: false });
      assert.equal(model.hp.arch, arch);
      // 20 tokens: past gemma3's sliding window (5) so local layers really mask.
      const d = batchVsSteps(model, tokens(20, 1));
      assert.ok(d < BATCH_TOL, `${arch}: max relative logit difference ${d}`);
    });
  }
}

test('gemma3: local layers follow the 5-local/1-global pattern with their own RoPE base', () => {
  const model = modelFromLoaded(tinyModel('gemma3'));
  assert.deepEqual(model.hp.swaLayers, [true, true, true, true, true, false, true]);
  assert.equal(model.hp.slidingWindow, TINY_SLIDING_WINDOW);
  assert.equal(model.hp.ropeThetaSwa, 10000);
  assert.notEqual(model.ropeLocal, model.ropeGlobal);
  assert.equal(model.hp.attnScale, 1 / Math.sqrt(32));
});

test('gemma3: the sliding window changes the logits once the prompt is longer than it', () => {
  // Same model with a window longer than the prompt: identical up to the window, different after.
  const loaded = tinyModel('gemma3');
  const md = new Map(loaded.metadata);
  md.set('gemma3.attention.sliding_window', { type: 'u32', value: 100 });
  const windowed = modelFromLoaded(loaded);
  const global = modelFromLoaded({ ...loaded, metadata: md });
  const toks = tokens(12, 3);
  const run = (m: Model) => m.forward(toks, m.createCache({ policy: F32, capacity: 256 }), { allLogits: true });
  const a = run(windowed);
  const b = run(global);
  const row = (x: Float32Array, i: number) => x.subarray(i * TINY.vocab, (i + 1) * TINY.vocab);
  assert.ok(maxRelDiff(row(a, TINY_SLIDING_WINDOW - 1), row(b, TINY_SLIDING_WINDOW - 1)) < 1e-6);
  assert.ok(maxRelDiff(row(a, 11), row(b, 11)) > 1e-3);
});

test('quantized weights stay quantized unless expanded, and give the same logits', () => {
  const loaded = tinyModel('qwen2', { quant: 'q8_0' });
  const packed = modelFromLoaded(loaded, { expand: false });
  const expanded = modelFromLoaded(loaded, { expand: true });
  assert.ok(packed.weightBytes * 3 < expanded.weightBytes, `${packed.weightBytes} vs ${expanded.weightBytes}`);
  const toks = tokens(6, 2);
  const a = packed.forward(toks, packed.createCache({ policy: F32, capacity: 256 }));
  const b = expanded.forward(toks, expanded.createCache({ policy: F32, capacity: 256 }));
  assert.ok(maxRelDiff(a, b) < 1e-6);
});

test('an unsupported architecture is a typed error naming the known ones', () => {
  const loaded = tinyModel('llama');
  assert.throws(
    () => modelFromLoaded({ ...loaded, arch: 'mamba' }),
    (e: unknown) => e instanceof UnknownArchitectureError && /mamba.*llama/.test(e.message),
  );
});

test('forward rejects out-of-range tokens and a cache of the wrong shape', () => {
  const model = modelFromLoaded(tinyModel('llama'));
  const cache = model.createCache({ policy: F32, capacity: 256 });
  assert.throws(() => model.forward([TINY.vocab], cache), /outside/);
  assert.equal(cache.length, 0);
  const other = modelFromLoaded(tinyModel('qwen3'));
  assert.throws(() => other.forward([1], cache), /cache is/);
});
