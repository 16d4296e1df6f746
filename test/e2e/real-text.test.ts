// The shared real models write the stories their README quotes (greedy from "Once upon a time"): the
// tokenizer, weights and engine together are a model, not token soup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromRoot } from '../paths.js';
import { loadModel } from '../../src/model/model.js';
import { generate } from '../../src/model/generate.js';
import { schemePolicy } from '../../src/cache/schemes.js';

const MODELS = fromRoot('..', 'shared', 'models');
/** The continuations ../shared/models/README.md quotes for each model. */
const CASES: [file: string, expected: string][] = [
  ['stories260K.bin', ', there was a little girl named Lily. She loved to play outside in the park.'],
  ['stories260K.gguf', ', there was a little girl named Lily. She loved to play outside in the park.'],
  ['tinystories-656k.gguf', ', a little girl named Lily lived in a small house with her mom, dad, and her dog, Spot,'],
];

function greedyText(path: string, n: number): string {
  const model = loadModel(path);
  assert.ok(model.tokenizer, `${path}: ${model.tokenizerProblem}`);
  const tk = model.tokenizer;
  const cache = model.createCache({ policy: schemePolicy('f16', { window: 0, sinks: 0 }), capacity: 64 });
  const r = generate(model, cache, tk.encode('Once upon a time'), { maxTokens: n, sampler: { temperature: 0 }, eos: [] });
  cache.dispose();
  return tk.decode(r.tokens);
}

for (const [file, expected] of CASES) {
  test(`${file}: greedy from "Once upon a time" writes the story its README quotes`, (t) => {
    const path = join(MODELS, file);
    if (!existsSync(path)) return void t.skip(`${path} not present`);
    const text = greedyText(path, 48);
    assert.ok(text.startsWith(expected), JSON.stringify(text));
  });
}

test('a llama2.c checkpoint without its tokenizer file has no tokenizer (and says why)', (t) => {
  const bin = join(MODELS, 'stories260K.bin');
  if (!existsSync(bin)) return void t.skip(`${bin} not present`);
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-notok-'));
  try {
    copyFileSync(bin, join(dir, 'stories260K.bin'));
    const model = loadModel(join(dir, 'stories260K.bin'));
    assert.equal(model.tokenizer, undefined);
    assert.match(model.tokenizerProblem ?? '', /no llama2\.c tokenizer file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
