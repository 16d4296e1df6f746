import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FileFormatError } from '../errors.js';
import { memorySource } from './source.js';
import { llama2cVocabMetadata, readLlama2cVocab } from './llama2c-vocab.js';

/** A llama2.c tokenizer file: max_token_length, then (score, length, bytes) per piece. */
function tokFile(pieces: [string, number][], maxLen = 8): Uint8Array {
  const parts: Buffer[] = [Buffer.from(Int32Array.of(maxLen).buffer)];
  for (const [p, s] of pieces) {
    const b = Buffer.from(p, 'utf8');
    const h = Buffer.alloc(8);
    h.writeFloatLE(s, 0);
    h.writeInt32LE(b.length, 4);
    parts.push(h, b);
  }
  return new Uint8Array(Buffer.concat(parts));
}

const PIECES: [string, number][] = [
  ['<unk>', 0],
  ['\n<s>\n', 0],
  ['\n</s>\n', 0],
  ['<0x0A>', 0],
  [' t', -1],
  ['he', -2.5],
];

test('llama2.c vocab: pieces and scores as llama.cpp stores them (spaces as U+2581, plain control pieces, byte tokens)', () => {
  const md = new Map(llama2cVocabMetadata(readLlama2cVocab(memorySource(tokFile(PIECES)), PIECES.length)));
  assert.deepEqual(md.get('tokenizer.ggml.tokens')!.value, ['<unk>', '<s>', '</s>', '<0x0A>', '\u2581t', 'he']);
  assert.deepEqual([...(md.get('tokenizer.ggml.scores')!.value as Float32Array)], [0, 0, 0, 0, -1, -2.5]);
  assert.deepEqual([...(md.get('tokenizer.ggml.token_type')!.value as Int32Array)], [2, 3, 3, 6, 1, 1]);
  assert.equal(md.get('tokenizer.ggml.add_bos_token')!.value, true);
});

test('llama2.c vocab: malformed files are typed errors naming the problem', () => {
  const bytes = tokFile(PIECES);
  const bad = (b: Uint8Array, n: number, pattern: RegExp) =>
    assert.throws(
      () => readLlama2cVocab(memorySource(b), n),
      (e: unknown) => e instanceof FileFormatError && pattern.test(e.message),
    );
  bad(bytes.slice(0, 2), PIECES.length, /truncated/);
  bad(bytes.slice(0, bytes.length - 1), PIECES.length, /truncated inside token 5/);
  bad(bytes, PIECES.length - 1, /follow the 5 tokens/);
  bad(bytes, PIECES.length + 1, /truncated at token 6/);
  bad(tokFile(PIECES, 0), PIECES.length, /max_token_length 0/);
  bad(tokFile([['toolongpiece', 0]], 4), 1, /length 12 is outside/);
});
