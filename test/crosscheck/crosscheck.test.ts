// kvpack against llama.cpp (node-llama-cpp's CPU binary), the quick version: every architecture with an
// f16 cache (greedy tokens and logits) and q8_0/q4_0 caches (KL, top-1) on short decodes, plus stories260K
// and the converted TinyStories-656K HF directory when present. `npm run crosscheck` runs the full matrix.
// Skips when the addon cannot load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatResult, runCase, type CaseSpec } from './cases.js';
import { LlamaCpp } from './llamacpp.js';
import { CROSS_ARCHS } from './models.js';
import { storiesGreedy, storiesPath } from './stories.js';
import { convertedTinyStories } from './hf.js';

/** Past gemma3's 16-token window in the prompt alone; 24 decodes keep the suite at a few seconds. */
const PROMPT = 40;
const STEPS = 24;
const STORIES_STEPS = 80;

const lc = await LlamaCpp.open();
const dir = mkdtempSync(join(tmpdir(), 'kvpack-xc-test-'));
test.after(async () => {
  if (typeof lc !== 'string') await lc.dispose();
  rmSync(dir, { recursive: true, force: true });
});

for (const arch of CROSS_ARCHS) {
  const cases: CaseSpec[] = [
    { arch, weightType: 'f32', cache: 'f16', flashAttention: false, promptLength: PROMPT, steps: STEPS },
    { arch, weightType: 'f16', cache: 'q8_0', flashAttention: true, promptLength: PROMPT, steps: STEPS },
    { arch, weightType: 'f16', cache: 'q4_0', flashAttention: true, promptLength: PROMPT, steps: STEPS },
  ];
  for (const spec of cases) {
    test(`llama.cpp vs kvpack: ${arch}, ${spec.weightType} weights, ${spec.cache} cache`, async (t) => {
      if (typeof lc === 'string') return t.skip(lc);
      const r = await runCase(lc, join(dir, `${arch}-${spec.cache}.gguf`), spec);
      t.diagnostic(formatResult(r));
      assert.deepEqual(r.failures, [], formatResult(r));
    });
  }
}

test('llama.cpp vs kvpack: stories260K greedy from BOS, f16 cache', async (t) => {
  const stories = storiesPath();
  if ('skip' in stories) return t.skip(stories.skip);
  if (typeof lc === 'string') return t.skip(lc);
  // Flash attention on: llama.cpp's default where supported; its free-running tokens stay identical here.
  const r = await storiesGreedy(lc, stories.path, STORIES_STEPS, true);
  t.diagnostic(formatResult(r));
  assert.deepEqual(r.failures, [], formatResult(r));
  assert.equal(r.diff.sameTokens, STORIES_STEPS, 'free-running greedy tokens identical');
});

test('llama.cpp vs kvpack: TinyStories-656K converted from its HF directory, greedy from BOS, f16 cache', async (t) => {
  if (typeof lc === 'string') return t.skip(lc);
  const conv = convertedTinyStories(dir);
  if ('skip' in conv) return t.skip(conv.skip);
  if (conv.borrowedVocab) t.diagnostic('the converter wrote no vocabulary: tokenizer.* keys taken from the shared tinystories-656k.gguf');
  const r = await storiesGreedy(lc, conv.path, STORIES_STEPS, true);
  t.diagnostic(formatResult(r));
  assert.deepEqual(r.failures, [], formatResult(r));
  assert.equal(r.diff.sameTokens, STORIES_STEPS, 'free-running greedy tokens identical');
});
