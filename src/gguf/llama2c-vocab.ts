// llama2.c tokenizer files (`tokenizer.bin`, `tok512.bin`; run.c build_tokenizer): int32 max_token_length,
// then per token f32 score, int32 byte length, the piece's UTF-8 bytes. Read into the tokenizer.ggml.*
// entries llama.cpp's GGUF writer stores for the same vocabulary (SentencePiece "llama" model).
import { FileFormatError } from '../errors.js';
import type { ByteSource } from './source.js';
import { gv, type GgufValue } from './values.js';
import { TOKEN_TYPE } from './vocab.js';

/** Longest piece a llama2.c tokenizer may declare: far above any real one, guards length fields. */
const MAX_PIECE_BYTES = 1 << 16;
const BYTE_PIECE = /^<0x[0-9A-F]{2}>$/;

export interface Llama2cVocab {
  readonly pieces: readonly string[];
  readonly scores: Float32Array; // [nVocab]
}

const fail = (src: ByteSource, message: string) => new FileFormatError('llama2c tokenizer', `${src.name}: ${message}`);

/** Reads `nVocab` pieces (the checkpoint's vocab_size: the file does not store the count) and checks the length. */
export function readLlama2cVocab(src: ByteSource, nVocab: number): Llama2cVocab {
  if (src.size < 4) throw fail(src, `truncated: ${src.size} B has no max_token_length`);
  const bytes = src.read(0, src.size);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const maxLen = dv.getInt32(0, true);
  if (maxLen < 1 || maxLen > MAX_PIECE_BYTES) throw fail(src, `max_token_length ${maxLen} is outside 1..${MAX_PIECE_BYTES} (not a llama2.c tokenizer?)`);
  const utf8 = new TextDecoder('utf-8', { fatal: false });
  const pieces: string[] = [];
  const scores = new Float32Array(nVocab);
  let at = 4;
  for (let i = 0; i < nVocab; i++) {
    if (at + 8 > bytes.length) throw fail(src, `truncated at token ${i} of ${nVocab} (the checkpoint's vocab_size)`);
    scores[i] = dv.getFloat32(at, true);
    const len = dv.getInt32(at + 4, true);
    if (len < 0 || len > maxLen) throw fail(src, `token ${i}: length ${len} is outside 0..max_token_length ${maxLen}`);
    if (at + 8 + len > bytes.length) throw fail(src, `truncated inside token ${i}`);
    pieces.push(utf8.decode(bytes.subarray(at + 8, at + 8 + len)));
    at += 8 + len;
  }
  if (at !== bytes.length) throw fail(src, `${bytes.length - at} B follow the ${nVocab} tokens: vocab_size of another model?`);
  return { pieces, scores };
}

/**
 * The tokenizer.ggml.* entries for a llama2.c vocabulary as llama.cpp's writer stores them: spaces as '▁',
 * run.c's "\n<s>\n" / "\n</s>\n" as the plain control pieces, <0xXX> as byte tokens.
 */
export function llama2cVocabMetadata(v: Llama2cVocab): [string, GgufValue][] {
  const tokens = v.pieces.map((p, i) => (i === 1 || i === 2 ? p.trim() : p.replace(/ /g, '\u2581')));
  const types = Int32Array.from(tokens, (t, i) =>
    i === 0 ? TOKEN_TYPE.UNKNOWN : i <= 2 ? TOKEN_TYPE.CONTROL : BYTE_PIECE.test(t) ? TOKEN_TYPE.BYTE : TOKEN_TYPE.NORMAL,
  );
  return [
    ['tokenizer.ggml.model', gv.str('llama')],
    ['tokenizer.ggml.tokens', gv.strings(tokens)],
    ['tokenizer.ggml.scores', gv.f32s(v.scores)],
    ['tokenizer.ggml.token_type', gv.i32s(types)],
    ['tokenizer.ggml.bos_token_id', gv.u32(1)],
    ['tokenizer.ggml.eos_token_id', gv.u32(2)],
    ['tokenizer.ggml.unknown_token_id', gv.u32(0)],
    ['tokenizer.ggml.add_bos_token', gv.bool(true)],
    ['tokenizer.ggml.add_eos_token', gv.bool(false)],
  ];
}
