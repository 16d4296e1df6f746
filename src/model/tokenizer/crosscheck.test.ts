// Our tokenizer against llama.cpp's (through node-llama-cpp) on identical vocabularies: trained vocabs
// written as vocab-only GGUF files, plus stories260K.gguf when present. Skips with a reason when the
// native addon cannot load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromRoot } from '../../../test/paths.js';
import { Prng } from '../../numeric/prng.js';
import { llamaCppVocabLoader, vocabGguf, type LlamaVocabModel } from '../../../test/fixtures/tokenizer-gguf.js';
import { SAMPLES, trainedBpeMetadata, trainedSpmMetadata } from '../../../test/fixtures/tokenizer.js';
import { createTokenizer } from './tokenizer.js';

const STORIES = fromRoot('..', 'shared', 'models', 'stories260K.gguf');
const RANDOM_STRINGS = 150;

// Fragments chosen to hit every regex branch, byte fallback and special-token matching.
const PIECES = [
  'a',
  'Z',
  'the',
  ' cat',
  'Lily',
  'é',
  'ß',
  '日本',
  'ру',
  '😀',
  '👍🏽',
  'e\u0301',
  '0',
  '42',
  '12345',
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '\n\n',
  '\u3000',
  '\u00a0',
  '\u0085',
  '\ufeff',
  "'s",
  "'LL",
  "'",
  '.',
  ',',
  '!?',
  '...',
  '$',
  '(',
  '}',
  '<|im_start|>',
  '<|im_end|>',
  '<tool>',
  '<s>',
  '</s>',
  '<start_of_turn>',
  '▁',
];

function randomStrings(seed: number): string[] {
  const rng = new Prng(seed);
  return Array.from({ length: RANDOM_STRINGS }, () => {
    let s = '';
    for (let n = 1 + rng.int(12); n > 0; n--) s += PIECES[rng.int(PIECES.length)];
    return s;
  });
}

const VOCABS: [string, () => Map<string, unknown>][] = [
  ['spm', () => trainedSpmMetadata()],
  ['spm-no-prefix', () => trainedSpmMetadata({ addSpacePrefix: false })],
  ['gemma4', () => trainedSpmMetadata({ model: 'gemma4', addSpacePrefix: false })],
  ...['gpt-2', 'llama-bpe', 'qwen2', 'smollm', 'default', 'falcon', 'starcoder', 'qwen35'].map(
    (pre) => [pre, () => trainedBpeMetadata({ pre, extraTokens: [' the cat'] })] as [string, () => Map<string, unknown>],
  ),
];

test('tokenize and detokenize agree with llama.cpp on trained vocabularies', async (t) => {
  const load = await llamaCppVocabLoader();
  if (typeof load === 'string') return t.skip(load);
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-tok-'));
  try {
    for (const [name, make] of VOCABS) {
      const meta = make();
      const path = join(dir, `${name}.gguf`);
      writeFileSync(path, vocabGguf(meta));
      const model: LlamaVocabModel = await load(path);
      const ours = createTokenizer(meta);
      const texts = [...SAMPLES, ...randomStrings(name.length * 7919)];
      for (const text of texts) {
        for (const special of [false, true]) {
          const theirs: number[] = Array.from(model.tokenize(text, special));
          const where = `${name} special=${special} ${JSON.stringify(text)}`;
          assert.deepEqual(ours.encode(text, { addSpecial: false, parseSpecial: special }), theirs, where);
          assert.equal(ours.decode(theirs, { special }), model.detokenize(theirs, special), `decode ${where}`);
        }
      }
      await model.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('stories260K.gguf: same tokens as llama.cpp (placeholder vocab: everything is byte fallback)', async (t) => {
  if (!existsSync(STORIES)) return t.skip(`${STORIES} not present`);
  const load = await llamaCppVocabLoader();
  if (typeof load === 'string') return t.skip(load);
  const model: LlamaVocabModel = await load(STORIES);
  const { parseGguf } = await import('../../gguf/reader.js');
  const { readFileSync } = await import('node:fs');
  const ours = createTokenizer(parseGguf(readFileSync(STORIES)).metadata);
  for (const text of [...SAMPLES, ...randomStrings(260)]) {
    const theirs: number[] = Array.from(model.tokenize(text, true));
    assert.deepEqual(ours.encode(text, { addSpecial: false, parseSpecial: true }), theirs, JSON.stringify(text));
    assert.equal(ours.decode(theirs, { special: true }), model.detokenize(theirs, true), JSON.stringify(text));
  }
  assert.equal(ours.encode('x')[0], 1, 'BOS first');
  await model.dispose();
});
