// The browser bundle (dist/browser/kvpack.js) without a browser: it holds no Node built-in, the package's
// "browser" export points at it, and imported into Node (no Workers, no isolation: one thread) it loads a
// model from an ArrayBuffer and generates what the Node engine does, and a Hugging Face directory held in
// memory (the seam a page's picked folder and served directory use) gives the Node engine's logits. File
// and directory paths give a one-line error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadModel } from '../../src/model/model.js';
import { generate } from '../../src/model/generate.js';
import { writeHfDir } from '../fixtures/hf-dir.js';
import { fromRoot } from '../paths.js';
import { testModel } from './fixture-model.js';

type Bundle = typeof import('../../src/browser.js');
const BUNDLE = fromRoot('dist', 'browser', 'kvpack.js');

test('browser bundle: no Node built-in, and the package exports it under the "browser" condition', () => {
  const pkg = JSON.parse(readFileSync(fromRoot('package.json'), 'utf8')) as { exports: Record<string, { browser: { default: string } }> };
  assert.equal(fromRoot(pkg.exports['.']!.browser.default), BUNDLE);
  for (const f of ['kvpack.js', 'pool-worker.js', 'engine-worker.js', 'app.js']) {
    const js = readFileSync(fromRoot('dist', 'browser', f), 'utf8');
    assert.doesNotMatch(js, /\b(?:from|import|require)\s*\(?\s*["']node:/, `${f} imports a Node built-in`);
  }
});

test("browser bundle: an ArrayBuffer model generates the Node engine's greedy tokens (one thread)", async () => {
  const b = (await import(pathToFileURL(BUNDLE).href)) as Bundle;
  const m = testModel();
  const path = `${m.dir}/${m.name}`;
  const bytes = readFileSync(path);
  const policy = b.schemePolicy('q2k', { window: 8, sinks: 2 });
  const inBundle = b.loadModelFrom(b.arrayBufferSource(bytes, m.name));
  assert.equal(await b.startThreads(2), 1, 'no Workers here: one thread');
  const prompt = inBundle.tokenizer!.encode('Once upon a time');
  const got = b.generate(inBundle, inBundle.createCache({ policy }), prompt, { maxTokens: 12, sampler: { temperature: 0 } });
  const ref = loadModel(path);
  const want = generate(ref, ref.createCache({ policy }), ref.tokenizer!.encode('Once upon a time'), { maxTokens: 12, sampler: { temperature: 0 } });
  assert.deepEqual(got.tokens, want.tokens);
  assert.ok(got.tokens.length > 0);
  assert.throws(() => b.loadModelFrom(b.urlSource('http://127.0.0.1:9/x.gguf')), /not defined|Worker/);
  if (m.temporary) rmSync(m.dir, { recursive: true, force: true });
});

test("browser bundle: an HF directory in memory (sharded, bf16) gives the Node engine's logits; paths are refused", async () => {
  const b = (await import(pathToFileURL(BUNDLE).href)) as Bundle;
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-bundle-hf-'));
  try {
    writeHfDir(dir, 'llama', { shards: 2, dtype: 'BF16' });
    const files = Object.fromEntries(readdirSync(dir).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))]));
    const inBundle = b.loadHfModelFrom(b.memoryFiles(files, 'tiny'));
    const ref = loadModel(dir);
    const policy = b.schemePolicy('f16', { window: 0, sinks: 0 });
    const prompt = [1, 5, 9, 2, 40, 7];
    const got = inBundle.forward(prompt, inBundle.createCache({ policy }), { allLogits: true });
    const want = ref.forward(prompt, ref.createCache({ policy }), { allLogits: true });
    assert.equal(got.length, want.length);
    assert.deepEqual(got, want);
    assert.throws(
      () => b.loadHfModel(dir),
      (e: unknown) => e instanceof Error && /directory paths need Node/.test(e.message) && !e.message.includes('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
