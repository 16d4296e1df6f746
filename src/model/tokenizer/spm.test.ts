// SentencePiece-style BPE on a hand-made vocab whose tokenizations are derived by hand in the comments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTokenizer } from './tokenizer.js';
import { Keys, TokenType } from './metadata.js';
import { byteTokenText } from './spm.js';

const BYTE0 = 3; // ids of <0x00>..<0xFF> start after <unk> <s> </s>

/** <unk> <s> </s>, 256 byte tokens, then (text, score) pieces, then <ctl> (control) and <usr> (user-defined). */
function spm(pieces: [string, number][], extra: [string, unknown][] = []) {
  const tokens = ['<unk>', '<s>', '</s>'];
  const scores = [0, 0, 0];
  const types: number[] = [TokenType.unknown, TokenType.control, TokenType.control];
  for (let b = 0; b < 256; b++) tokens.push(byteTokenText(b)), scores.push(0), types.push(TokenType.byte);
  for (const [t, s] of pieces) tokens.push(t), scores.push(s), types.push(TokenType.normal);
  tokens.push('<ctl>', '<usr>'), scores.push(0, 0), types.push(TokenType.control, TokenType.userDefined);
  const tk = createTokenizer(
    new Map<string, unknown>([
      [Keys.model, 'llama'],
      [Keys.tokens, tokens],
      [Keys.scores, Float32Array.from(scores)],
      [Keys.tokenType, Int32Array.from(types)],
      ...extra,
    ]),
  );
  const id = (t: string) => tokens.indexOf(t);
  const texts = (ids: number[]) => ids.map((i) => tokens[i]);
  return { tk, id, texts };
}

const HELLO: [string, number][] = [
  ['▁', -10],
  ['h', -10],
  ['e', -10],
  ['l', -10],
  ['o', -10],
  ['w', -10],
  ['r', -10],
  ['d', -10],
  ['ll', -1],
  ['he', -2],
  ['hell', -3],
  ['hello', -4],
  ['▁hello', -5],
  ['▁w', -6],
  ['or', -7],
  ['ld', -7.5],
  ['▁wor', -8],
  ['▁world', -9],
];

test('merges by score: "hello world" -> ▁hello ▁world', () => {
  // ▁ h e l l o ▁ w o r l d: ll(-1), he(-2), hell(-3), hello(-4), ▁hello(-5), ▁w(-6), or(-7), ld(-7.5),
  // ▁wor(-8), ▁world(-9), in that order.
  const { tk, texts } = spm(HELLO);
  assert.deepEqual(texts(tk.encode('hello world', { addSpecial: false })), ['▁hello', '▁world']);
  // "held": he(-2) then ld(-7.5); neither "▁he" nor "held" is a token.
  assert.deepEqual(texts(tk.encode('held', { addSpecial: false })), ['▁', 'he', 'ld']);
});

test('equal scores merge the leftmost pair first', () => {
  const { tk, texts } = spm(
    [
      ['a', -5],
      ['b', -5],
      ['c', -5],
      ['ab', -1],
      ['bc', -1],
    ],
    [[Keys.addSpacePrefix, false]],
  );
  assert.deepEqual(texts(tk.encode('abc', { addSpecial: false })), ['ab', 'c']);
  // A higher score wins over position.
  const r = spm(
    [
      ['a', -5],
      ['b', -5],
      ['c', -5],
      ['ab', -2],
      ['bc', -1],
    ],
    [[Keys.addSpacePrefix, false]],
  );
  assert.deepEqual(r.texts(r.tk.encode('abc', { addSpecial: false })), ['a', 'bc']);
});

test('byte fallback spells unknown characters as their UTF-8 bytes', () => {
  const { tk } = spm(HELLO);
  // é is C3 A9; 😀 is F0 9F 98 80.
  assert.deepEqual(
    tk.encode('hé😀', { addSpecial: false }).slice(2),
    [0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x80].map((b) => BYTE0 + b),
  );
  // After a BOS llama.cpp's detokenize keeps the prefix space; without one it strips it.
  assert.equal(tk.decode(tk.encode('hé😀 x\ty')), ' hé😀 x\ty');
  assert.equal(tk.decode(tk.encode('hé😀 x\ty'), { removeSpecial: true }), ' hé😀 x\ty');
  assert.equal(tk.decode(tk.encode('hé😀 x\ty', { addSpecial: false })), 'hé😀 x\ty');
});

test('space prefix: added at the start and after special tokens, stripped from the first piece on decode', () => {
  const { tk, id, texts } = spm(HELLO);
  assert.deepEqual(texts(tk.encode(' hello', { addSpecial: false })), ['▁', '▁hello']);
  assert.equal(tk.decode(tk.encode(' hello', { addSpecial: false })), ' hello');
  const ids = tk.encode('hello<ctl>hello', { addSpecial: false, parseSpecial: true });
  assert.deepEqual(texts(ids), ['▁hello', '<ctl>', '▁hello']);
  assert.equal(tk.decode(ids, { special: true }), 'hello<ctl> hello');
  assert.equal(id('<ctl>'), ids[1]);
  const off = spm(HELLO, [[Keys.addSpacePrefix, false]]);
  assert.deepEqual(off.texts(off.tk.encode('hello world', { addSpecial: false })), ['hello', '▁world']);
});

test('control tokens are text unless parseSpecial; user-defined tokens always match', () => {
  const { tk, id } = spm(HELLO);
  assert.ok(!tk.encode('<ctl>', { addSpecial: false }).includes(id('<ctl>')));
  assert.ok(tk.encode('<ctl>', { addSpecial: false, parseSpecial: true }).includes(id('<ctl>')));
  assert.ok(tk.encode('x<usr>y', { addSpecial: false }).includes(id('<usr>')));
  // Control tokens print only with special; user-defined ones always.
  assert.equal(tk.decode([id('<ctl>'), id('<usr>')]), '<usr>');
  assert.equal(tk.decode([id('<ctl>'), id('<usr>')], { special: true }), '<ctl><usr>');
});

test('BOS/EOS: SPM adds BOS by default; add_bos_token / add_eos_token override', () => {
  const { tk } = spm(HELLO);
  assert.deepEqual(tk.encode('hello'), [1, tk.vocab.id('▁hello')]);
  assert.deepEqual(tk.encode(''), [1]);
  assert.deepEqual(tk.encode('', { addSpecial: false }), []);
  const both = spm(HELLO, [
    [Keys.addBos, false],
    [Keys.addEos, true],
  ]).tk;
  assert.deepEqual(both.encode('hello'), [both.vocab.id('▁hello'), 2]);
  // removeSpecial drops the added EOS.
  assert.equal(both.decode(both.encode('hello'), { removeSpecial: true }), 'hello');
  assert.ok(both.isEog(2) && !both.isEog(1));
});
