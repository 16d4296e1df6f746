// Round trips on trained vocabularies, llama.cpp's clean-up rule, and streaming across byte tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ArgumentError } from '../../errors.js';
import { cleanSpaces } from './decode.js';
import { SAMPLES, trainedBpeMetadata, trainedSpmMetadata } from '../../../test/fixtures/tokenizer.js';
import { createTokenizer, type Tokenizer } from './tokenizer.js';

const VOCABS: [string, Tokenizer][] = [
  ['spm', createTokenizer(trainedSpmMetadata())],
  ['spm, no space prefix (gemma)', createTokenizer(trainedSpmMetadata({ addSpacePrefix: false }))],
  ['gemma4', createTokenizer(trainedSpmMetadata({ model: 'gemma4', addSpacePrefix: false }))],
  ...['gpt-2', 'llama-bpe', 'qwen2', 'smollm', 'default'].map((p) => [p, createTokenizer(trainedBpeMetadata({ pre: p }))] as [string, Tokenizer]),
];

test('encode -> decode returns the input (no BOS, no clean-up)', () => {
  for (const [name, tk] of VOCABS) {
    for (const s of SAMPLES) {
      const ids = tk.encode(s, { addSpecial: false });
      assert.equal(tk.decode(ids, { cleanSpaces: false }), s, `${name}: ${JSON.stringify(s)}`);
    }
  }
});

test('round trip with special tokens parsed (byte-level BPE adds no space after them)', () => {
  for (const [name, tk] of VOCABS.slice(2)) {
    for (const s of SAMPLES) {
      const ids = tk.encode(s, { addSpecial: false, parseSpecial: true });
      assert.equal(tk.decode(ids, { special: true, cleanSpaces: false }), s, `${name}: ${JSON.stringify(s)}`);
    }
  }
});

test('the trained vocabs really merge and really fall back to bytes', () => {
  const spm = VOCABS[0]![1];
  const ids = spm.encode('Once upon a time 😀', { addSpecial: false });
  assert.ok(
    ids.some((i) => spm.tokenText(i) === '▁Once'),
    'whole-word piece expected',
  );
  assert.deepEqual(
    ids.slice(-4).map((i) => spm.tokenText(i)),
    ['<0xF0>', '<0x9F>', '<0x98>', '<0x80>'],
  );
});

test('clean_spaces: llama.cpp drops spaces before ?!., and inside contractions', () => {
  assert.equal(cleanSpaces("Hi , you . Yes ! No ? it 's we 're I 'm they 've don 't a ' b"), "Hi, you. Yes! No? it's we're I'm they've don 't a'b");
  const gpt2 = createTokenizer(trainedBpeMetadata({ pre: 'gpt-2' }));
  assert.equal(gpt2.vocab.cleanSpaces, true);
  assert.equal(gpt2.decode(gpt2.encode('a , b')), 'a, b');
  assert.equal(gpt2.decode(gpt2.encode('a , b'), { cleanSpaces: false }), 'a , b');
});

test('stream decoding emits whole characters only and equals one-shot decode', () => {
  for (const [name, tk] of VOCABS) {
    for (const s of SAMPLES) {
      const ids = tk.encode(s, { addSpecial: false });
      const stream = tk.stream();
      let text = '';
      for (const id of ids) {
        const part = stream.push(id);
        assert.ok(!part.includes('\ufffd'), `${name}: partial character leaked for ${JSON.stringify(s)}`);
        text += part;
      }
      text += stream.flush();
      // Streaming strips no prefix space: compare with the raw pieces.
      const raw = new TextDecoder('utf-8', { ignoreBOM: true }).decode(Buffer.concat(ids.map((i) => tk.piece(i))));
      assert.equal(text, raw, `${name}: ${JSON.stringify(s)}`);
    }
  }
});

test('an emoji split over four byte tokens appears on the fourth', () => {
  const tk = VOCABS[0]![1];
  const ids = tk.encode('😀', { addSpecial: false }).slice(-4);
  const stream = tk.stream();
  assert.deepEqual(
    ids.map((i) => stream.push(i)),
    ['', '', '', '😀'],
  );
  const cut = tk.stream();
  cut.push(ids[0]!);
  assert.equal(cut.flush(), '\ufffd', 'a dangling partial character flushes as U+FFFD');
});

test('ids outside the vocab are an ArgumentError', () => {
  const tk = VOCABS[0]![1];
  assert.throws(() => tk.decode([tk.size]), ArgumentError);
  assert.throws(() => tk.decode([-1]), ArgumentError);
  assert.throws(() => tk.stream().push(1.5), ArgumentError);
});
