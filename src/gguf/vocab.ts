// A placeholder SentencePiece ("llama") vocabulary for converted checkpoints that carry none, laid out
// like llama.cpp's convert-llama2c output: <unk>, <s>, </s>, the 256 byte tokens, then '▁t<i>' pieces.
import { ArgumentError } from '../errors.js';
import { gv, type GgufValue } from './values.js';

/** llama.cpp's llama_token_type values (tokenizer.ggml.token_type). */
export const TOKEN_TYPE = Object.freeze({ NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 });

/** 3 specials + 256 byte tokens: the smallest vocabulary a byte-fallback SentencePiece model can have. */
export const PLACEHOLDER_MIN_VOCAB = 259;

/** tokenizer.ggml.* metadata entries for a vocabulary of `nVocab` placeholder tokens. */
export function placeholderVocab(nVocab: number): [string, GgufValue][] {
  if (!Number.isInteger(nVocab) || nVocab < PLACEHOLDER_MIN_VOCAB) {
    throw new ArgumentError(`placeholder vocabulary needs at least ${PLACEHOLDER_MIN_VOCAB} tokens, got ${nVocab}`);
  }
  const tokens: string[] = new Array(nVocab);
  const scores = new Float32Array(nVocab);
  const types = new Int32Array(nVocab);
  tokens[0] = '<unk>';
  types[0] = TOKEN_TYPE.UNKNOWN;
  tokens[1] = '<s>';
  types[1] = TOKEN_TYPE.CONTROL;
  tokens[2] = '</s>';
  types[2] = TOKEN_TYPE.CONTROL;
  for (let b = 0; b < 256; b++) {
    tokens[3 + b] = `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
    types[3 + b] = TOKEN_TYPE.BYTE;
  }
  for (let i = PLACEHOLDER_MIN_VOCAB; i < nVocab; i++) {
    tokens[i] = `\u2581t${i}`;
    // Descending scores: SentencePiece merges prefer higher scores, so earlier ids win ties.
    scores[i] = -i;
    types[i] = TOKEN_TYPE.NORMAL;
  }
  return [
    ['tokenizer.ggml.model', gv.str('llama')],
    ['tokenizer.ggml.tokens', gv.strings(tokens)],
    ['tokenizer.ggml.scores', gv.f32s(scores)],
    ['tokenizer.ggml.token_type', gv.i32s(types)],
    ['tokenizer.ggml.bos_token_id', gv.u32(1)],
    ['tokenizer.ggml.eos_token_id', gv.u32(2)],
    ['tokenizer.ggml.unknown_token_id', gv.u32(0)],
  ];
}
