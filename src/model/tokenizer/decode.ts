// Token ids back to text. Pieces are bytes, not strings: a character may be split across byte tokens, so
// text is only decoded once the bytes are joined (decode) or complete (StreamDecoder).
import { ArgumentError } from '../../errors.js';
import { CHAR_TO_BYTE } from './byte-unicode.js';
import { TokenType } from './metadata.js';
import type { Vocab } from './vocab.js';

const utf8 = new TextEncoder();
// ignoreBOM keeps a leading U+FEFF: it is text the user wrote, not a marker to drop.
const UTF8_OPTS: TextDecoderOptions = { ignoreBOM: true };
const EMPTY = new Uint8Array(0);
const SPACE = 0x20;

/**
 * The bytes one token stands for (llama.cpp's token_to_piece). Control and unknown tokens are empty unless
 * `special`; user-defined tokens are their text; byte tokens one byte.
 */
export function tokenPiece(vocab: Vocab, id: number, special: boolean): Uint8Array {
  if (!Number.isInteger(id) || id < 0 || id >= vocab.tokens.length) {
    throw new ArgumentError(`token id ${id} is outside the vocab (0..${vocab.tokens.length - 1})`);
  }
  const text = vocab.tokens[id]!;
  switch (vocab.types[id]) {
    case TokenType.control:
    case TokenType.unknown:
      return special ? utf8.encode(text) : EMPTY;
    case TokenType.userDefined:
      return utf8.encode(text);
    case TokenType.byte:
      return Uint8Array.of(parseInt(text.slice(3, 5), 16));
    case TokenType.normal:
      return vocab.escapeWhitespace ? utf8.encode(text.replaceAll('\u2581', ' ')) : byteLevelBytes(text);
    default:
      // Unused and undefined tokens print nothing, like llama.cpp.
      return EMPTY;
  }
}

// Undo the GPT-2 byte map; a character outside it (a malformed vocab) passes through as its UTF-8.
function byteLevelBytes(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    const b = CHAR_TO_BYTE.get(ch);
    if (b !== undefined) out.push(b);
    else out.push(...utf8.encode(ch));
  }
  return Uint8Array.from(out);
}

export interface DecodeOptions {
  /** Render control/unknown tokens as their text (llama.cpp's unparse_special). Default false. */
  special?: boolean;
  /** Drop a leading BOS and trailing EOS that encode() would add (llama.cpp's remove_special). Default false. */
  removeSpecial?: boolean;
  /** Apply llama.cpp's clean_spaces (" ." -> "."); default: the vocab's flag. Pass false for exact round trips. */
  cleanSpaces?: boolean;
}

/** ids -> text, the same rules as llama.cpp's llama_detokenize. */
export function decodeTokens(vocab: Vocab, ids: readonly number[], opts: DecodeOptions = {}): string {
  const special = opts.special ?? false;
  let first = 0;
  let end = ids.length;
  // The space prefix encode() added is stripped from the first piece, unless a removed BOS precedes it.
  let stripSpace = vocab.addSpacePrefix;
  if (opts.removeSpecial && vocab.addBos && end > 0 && ids[0] === vocab.bos) {
    stripSpace = false;
    first = 1;
  }
  if (opts.removeSpecial && vocab.addEos && end > first && ids[end - 1] === vocab.eos) end--;

  const pieces: Uint8Array[] = [];
  let total = 0;
  for (let i = first; i < end; i++) {
    let piece = tokenPiece(vocab, ids[i]!, special);
    // HF's decoders strip the prefix space from the first visible piece; llama.cpp from the first token.
    if (vocab.hf && piece.length === 0) continue;
    if (stripSpace && piece.length > 0 && piece[0] === SPACE) piece = piece.subarray(1);
    stripSpace = false;
    pieces.push(piece);
    total += piece.length;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const p of pieces) {
    bytes.set(p, at);
    at += p.length;
  }
  const text = new TextDecoder('utf-8', UTF8_OPTS).decode(bytes);
  return (opts.cleanSpaces ?? vocab.cleanSpaces) ? cleanSpaces(text) : text;
}

/**
 * llama.cpp's clean_spaces (after HF's clean_up_tokenization): drop the space before ? ! . , ; turn " ' "
 * into "'"; join " 's" " 'm" " 're" " 've". All ASCII, so working on the string equals working on bytes.
 */
export function cleanSpaces(text: string): string {
  return text
    .replace(/ (?=[?!.,])/g, '')
    .replace(/ ' /g, "'")
    .replace(/ '(?=s|m|re|ve)/g, "'");
}

/**
 * Incremental decoding for generation: push ids, get back only complete UTF-8 characters; bytes of a
 * character split across tokens wait for the rest. No space stripping or cleaning (llama.cpp's streaming
 * token_to_piece does neither).
 */
export class StreamDecoder {
  private readonly decoder = new TextDecoder('utf-8', UTF8_OPTS);

  constructor(
    private readonly vocab: Vocab,
    private readonly special = false,
  ) {}

  /** Text completed by this token ('' while a character is still partial). */
  push(id: number): string {
    return this.decoder.decode(tokenPiece(this.vocab, id, this.special), { stream: true });
  }

  /** Ends the stream: a dangling partial character comes out as U+FFFD. */
  flush(): string {
    return this.decoder.decode();
  }
}
