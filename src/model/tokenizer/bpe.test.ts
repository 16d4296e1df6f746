// Byte-level BPE on a hand-made vocab: the GPT-2 byte alphabet plus a few merges, derived by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BYTE_TO_CHAR, CHAR_TO_BYTE, byteEncode } from './byte-unicode.js';
import { createTokenizer } from './tokenizer.js';
import { Keys, TokenType } from './metadata.js';

// Ranks 0..8; each result is also a token.
const MERGES = ['h e', 'l l', 'he ll', 'hell o', 'Ġ w', 'o r', 'Ġw or', 'l d', 'Ġwor ld'];

function bpe(pre: string, extraTokens: string[] = []) {
  const tokens = [...BYTE_TO_CHAR, ...MERGES.map((m) => m.replace(' ', '')), ...extraTokens, '<|eot|>', '<tool>'];
  const types = tokens.map(() => TokenType.normal as number);
  types[types.length - 2] = TokenType.control;
  types[types.length - 1] = TokenType.userDefined;
  const tk = createTokenizer(
    new Map<string, unknown>([
      [Keys.model, 'gpt2'],
      [Keys.pre, pre],
      [Keys.tokens, tokens],
      [Keys.tokenType, Int32Array.from(types)],
      [Keys.merges, MERGES],
      [Keys.eos, tokens.length - 2],
    ]),
  );
  return { tk, texts: (ids: number[]) => ids.map((i) => tokens[i]) };
}

test('GPT-2 byte map: 256 distinct one-code-point characters, printable bytes kept, space is Ġ', () => {
  assert.equal(new Set(BYTE_TO_CHAR).size, 256);
  assert.ok(BYTE_TO_CHAR.every((c) => [...c].length === 1));
  assert.equal(BYTE_TO_CHAR[0x41], 'A');
  assert.equal(BYTE_TO_CHAR[0x20], 'Ġ');
  assert.equal(BYTE_TO_CHAR[0x0a], 'Ċ');
  for (let b = 0; b < 256; b++) assert.equal(CHAR_TO_BYTE.get(BYTE_TO_CHAR[b]!), b);
  assert.equal(byteEncode('é'), 'Ã©');
});

test('merges by rank: "hello world" -> hello Ġworld', () => {
  // hello: h e(0), l l(1), he ll(2), hell o(3). Ġworld: Ġ w(4), o r(5), Ġw or(6), l d(7), Ġwor ld(8).
  const { tk, texts } = bpe('gpt-2');
  assert.deepEqual(texts(tk.encode('hello world')), ['hello', 'Ġworld']);
  // Two spaces: \s+(?!\S) leaves the last space to the word: "hello" " " " world".
  assert.deepEqual(texts(tk.encode('hello  world')), ['hello', 'Ġ', 'Ġworld']);
  // Unmerged bytes stay single byte characters.
  assert.deepEqual(texts(tk.encode('héllo')), ['h', 'Ã', '©', 'll', 'o']);
  assert.equal(tk.decode(tk.encode('héllo  world\n')), 'héllo  world\n');
});

test('llama3 ignore_merges: a pre-token that is a token is taken whole', () => {
  // "Ġwo" is a token no merge reaches; gpt-2 pre splits it, llama3 pre (ignore_merges) keeps it.
  assert.deepEqual(bpe('gpt-2', ['Ġwo']).texts(bpe('gpt-2', ['Ġwo']).tk.encode(' wo')), ['Ġw', 'o']);
  const l3 = bpe('llama-bpe', ['Ġwo']);
  assert.deepEqual(l3.texts(l3.tk.encode(' wo', { addSpecial: false })), ['Ġwo']);
});

test('BPE BOS rules: none for gpt-2, added for the llama3 pre-tokenizer', () => {
  assert.equal(bpe('gpt-2').tk.vocab.addBos, false);
  const l3 = bpe('llama-bpe').tk;
  assert.equal(l3.vocab.addBos, true);
  assert.equal(l3.encode('hello')[0], l3.vocab.bos);
});

test('specials: control only with parseSpecial, user-defined always, eos marks end of generation', () => {
  const { tk, texts } = bpe('gpt-2');
  assert.deepEqual(texts(tk.encode('hello<|eot|>', { parseSpecial: true })), ['hello', '<|eot|>']);
  assert.ok(!texts(tk.encode('hello<|eot|>')).includes('<|eot|>'));
  assert.deepEqual(texts(tk.encode('hello<tool>')), ['hello', '<tool>']);
  assert.ok(tk.isEog(tk.vocab.eos));
});
