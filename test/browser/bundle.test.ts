// The browser bundle (dist/browser/kvpack.js) without a browser: it holds no Node built-in, the package's
// "browser" export points at it, and imported into Node (no Workers, no isolation: one thread) it loads a
// model from an ArrayBuffer and generates what the Node engine does. File paths give a one-line error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { loadModel } from '../../src/model/model.js';
import { generate } from '../../src/model/generate.js';
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

test('browser bundle: an ArrayBuffer model generates the Node engine\'s greedy tokens (one thread)', async () => {
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
