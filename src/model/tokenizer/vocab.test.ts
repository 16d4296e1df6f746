// Vocabulary loading: defaults, typed GGUF values, and malformed metadata as typed errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FileFormatError, UnknownTokenizerError } from '../../errors.js';
import { trainedBpeMetadata, trainedSpmMetadata } from '../../../test/fixtures/tokenizer.js';
import { Keys } from './metadata.js';
import { createTokenizer } from './tokenizer.js';
import { loadVocab, NO_TOKEN } from './vocab.js';

const withKey = (m: Map<string, unknown>, k: string, v: unknown) => new Map(m).set(k, v);
const without = (m: Map<string, unknown>, k: string) => {
  const c = new Map(m);
  c.delete(k);
  return c;
};

test('SPM defaults: BOS 1, EOS 2, UNK 0, add BOS, space prefix; BPE: no BOS, no prefix', () => {
  const spm = loadVocab(trainedSpmMetadata());
  assert.deepEqual([spm.bos, spm.eos, spm.unk, spm.addBos, spm.addEos, spm.addSpacePrefix], [1, 2, 0, true, false, true]);
  const bpe = loadVocab(trainedBpeMetadata({ pre: 'qwen2' }));
  assert.deepEqual([bpe.addBos, bpe.addSpacePrefix, bpe.unk, bpe.cleanSpaces], [false, false, NO_TOKEN, false]);
});

test('EOG: EOS plus chat end markers; the end-of-turn token is found by name', () => {
  const v = loadVocab(trainedBpeMetadata({ pre: 'qwen2' }));
  assert.equal(v.tokens[v.eot], '<|im_end|>');
  assert.ok(v.eog.has(v.eot) && v.eog.has(v.eos));
  const g = loadVocab(trainedSpmMetadata({ addSpacePrefix: false }));
  assert.equal(g.tokens[g.eot], '<end_of_turn>');
});

test("the GGUF reader's { type, value } entries and plain records are accepted", () => {
  const plain = trainedSpmMetadata();
  const wrapped = new Map([...plain].map(([k, v]) => [k, { type: 'x', value: v }]));
  const record = Object.fromEntries(plain);
  const ids = createTokenizer(plain).encode('Once upon a time');
  assert.deepEqual(createTokenizer(wrapped).encode('Once upon a time'), ids);
  assert.deepEqual(createTokenizer(record).encode('Once upon a time'), ids);
});

test('malformed metadata is a FileFormatError / UnknownTokenizerError naming the problem', () => {
  const m = trainedSpmMetadata();
  assert.throws(() => loadVocab(without(m, Keys.model)), FileFormatError);
  assert.throws(
    () => loadVocab(withKey(m, Keys.model, 'bert')),
    (e: unknown) => e instanceof UnknownTokenizerError && /'bert'/.test(String(e)),
  );
  assert.throws(() => loadVocab(withKey(m, Keys.tokens, ['a', 'b', 'a'])), /duplicate token 'a'/);
  assert.throws(() => loadVocab(withKey(m, Keys.scores, new Float32Array(3))), /scores has 3 entries/);
  assert.throws(() => loadVocab(withKey(m, Keys.tokens, 'abc')), FileFormatError);
  assert.throws(() => loadVocab(withKey(m, Keys.bos, -1)), FileFormatError);
  const b = trainedBpeMetadata({ pre: 'gpt-2' });
  assert.throws(() => loadVocab(without(b, Keys.merges)), /merges/);
  assert.throws(
    () => loadVocab(withKey(b, Keys.pre, 'mystery')),
    (e: unknown) => e instanceof UnknownTokenizerError && /mystery/.test(String(e)),
  );
});

test('an out-of-range special id falls back to the default, as llama.cpp', () => {
  const v = loadVocab(withKey(trainedSpmMetadata(), Keys.bos, 1e6));
  assert.equal(v.bos, 1);
});
