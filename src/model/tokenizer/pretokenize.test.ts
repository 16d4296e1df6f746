// Pre-tokenizer splits derived by hand from each regex (alternatives tried left to right, as in JS/ECMAScript).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UnknownTokenizerError } from '../../errors.js';
import { getPreTokenizer, preTokenize, PRE_TOKENIZERS } from './pretokenize.js';

const TEXT = "I'm 12345 hi!!  \n x";
const split = (pre: string, text = TEXT) => preTokenize(text, getPreTokenizer(pre).patterns);

test('gpt-2: contractions, " ?letters", " ?digits" and whitespace runs that leave one space to the next word', () => {
  assert.deepEqual(split('gpt-2'), ['I', "'m", ' 12345', ' hi', '!!', '  \n', ' x']);
  assert.deepEqual(split('gpt-2', 'a   b'), ['a', '  ', ' b']);
  assert.deepEqual(split('gpt-2', 'end   '), ['end', '   ']);
});

test('llama3: digits in threes, newlines absorb preceding spaces, case-insensitive contractions', () => {
  assert.deepEqual(split('llama-bpe'), ['I', "'m", ' ', '123', '45', ' hi', '!!', '  \n', ' x']);
  assert.deepEqual(split('llama3', "IT'S"), ['IT', "'S"]);
  assert.deepEqual(split('gpt-2', "IT'S"), ['IT', "'", 'S']);
});

test('qwen2: single digits', () => {
  assert.deepEqual(split('qwen2'), ['I', "'m", ' ', '1', '2', '3', '4', '5', ' hi', '!!', '  \n', ' x']);
});

test('smollm: digits split first, then the gpt-2 regex', () => {
  assert.deepEqual(split('smollm'), ['I', "'m", ' ', '1', '2', '3', '4', '5', ' hi', '!!', '  \n', ' x']);
});

test('default: punctuation runs first, then gpt-2, then digit groups', () => {
  assert.deepEqual(split('default'), ['I', "'", 'm', ' ', '123', '45', ' hi', '!!', '  \n', ' x']);
  assert.equal(getPreTokenizer(undefined).id, 'default');
});

test('whitespace is Unicode White_Space (U+0085 and U+3000 yes, U+FEFF no), as llama.cpp', () => {
  // Two U+3000: the run keeps one back (\s+(?!\S)); the last one is no match, so it stands alone.
  assert.deepEqual(split('gpt-2', 'a\u3000\u3000b'), ['a', '\u3000', '\u3000', 'b']);
  assert.deepEqual(split('gpt-2', 'a\ufeffb'), ['a', '\ufeff', 'b']);
  assert.deepEqual(split('gpt-2', 'a\u0085 b'), ['a', '\u0085', ' b']);
});

test('pieces always concatenate back to the input', () => {
  const text = "Mixed: café 日本語 😀👍🏽 e\u0301 \t\t tabs\r\n\r\n  42.5%  it's  ";
  for (const p of PRE_TOKENIZERS) assert.equal(preTokenize(text, p.patterns).join(''), text, p.id);
});

test('an unknown pre-tokenizer is an error naming it and the known ones', () => {
  assert.throws(
    () => getPreTokenizer('no-such-pre'),
    (e: unknown) => e instanceof UnknownTokenizerError && e.message.includes("'no-such-pre'") && e.message.includes('llama-bpe'),
  );
});
