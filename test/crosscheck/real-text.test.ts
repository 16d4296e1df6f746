// The shared real models in llama.cpp (node-llama-cpp) and kvpack: the same token ids for story text, and
// the same greedy continuation of "Once upon a time" with an f16 cache. Covers our own conversion of the
// llama2.c checkpoint + tok512.bin too. Skips when the addon cannot load or ../shared/models is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Token } from 'node-llama-cpp';
import { fromRoot } from '../paths.js';
import { loadModel } from '../../src/model/model.js';
import { convertLlama2c } from '../../src/gguf/convert.js';
import { compareF16, formatResult } from './cases.js';
import { LlamaCpp } from './llamacpp.js';
import { STORIES_TOL } from './stories.js';

const MODELS = fromRoot('..', 'shared', 'models');
const STEPS = 48;
const TEXTS = [
  'Once upon a time',
  'Tom and Sue went to the park. They saw a big, red ball!',
  'The cat said, "I am hungry." Then it ran away.\nThe end.',
  '  two  spaces, café, naïve 😊 and 42 apples',
];

const lc = await LlamaCpp.open();
const dir = mkdtempSync(join(tmpdir(), 'kvpack-xc-text-'));
test.after(async () => {
  if (typeof lc !== 'string') await lc.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** [label, path or a function writing the file] for every real model. */
const MODEL_FILES: [string, () => string][] = [
  ['stories260K.gguf', () => join(MODELS, 'stories260K.gguf')],
  ['tinystories-656k.gguf', () => join(MODELS, 'tinystories-656k.gguf')],
  [
    'stories260K.bin + tok512.bin, converted by kvpack',
    () => {
      const out = join(dir, 'stories260K-kvpack.gguf');
      if (!existsSync(out)) convertLlama2c(join(MODELS, 'stories260K.bin'), out, { vocab: join(MODELS, 'tok512.bin') });
      return out;
    },
  ],
];

for (const [label, file] of MODEL_FILES) {
  test(`llama.cpp vs kvpack on real text: ${label}`, async (t) => {
    if (typeof lc === 'string') return t.skip(lc);
    if (!existsSync(join(MODELS, 'stories260K.bin'))) return t.skip(`${MODELS} not present`);
    const path = file();
    const ours = loadModel(path);
    assert.ok(ours.tokenizer, ours.tokenizerProblem);
    const theirs = await lc.loadModel(path);
    try {
      // llama.cpp aborts (std::out_of_range) on a character its vocabulary lacks when there are no byte tokens.
      const hasBytes = ours.tokenizer.vocab.tokens.includes('<0x00>');
      for (const text of hasBytes ? TEXTS : TEXTS.slice(0, -1)) {
        assert.deepEqual(ours.tokenizer.encode(text, { addSpecial: false }), [...theirs.tokenize(text)], `tokens of ${JSON.stringify(text)}`);
        assert.equal(
          ours.tokenizer.decode(ours.tokenizer.encode(text, { addSpecial: false })),
          theirs.detokenize(theirs.tokenize(text)),
          `round trip of ${JSON.stringify(text)}`,
        );
      }
      const prompt = ours.tokenizer.encode('Once upon a time');
      assert.equal(prompt[0], ours.bos);
      const ref = await lc.run(theirs, prompt, STEPS, { cache: 'f16', flashAttention: true });
      const r = {
        spec: { arch: 'llama', weightType: 'f32', cache: 'f16', flashAttention: true, promptLength: prompt.length, steps: STEPS } as const,
        ...compareF16(ref, ours, prompt, STEPS, STORIES_TOL.on),
      };
      t.diagnostic(formatResult(r));
      t.diagnostic(`llama.cpp: ${JSON.stringify(theirs.detokenize(ref.tokens as Token[]))}`);
      assert.deepEqual(r.failures, [], formatResult(r));
      assert.equal(r.diff.sameTokens, STEPS, 'free-running greedy tokens identical');
    } finally {
      await theirs.dispose();
    }
  });
}
