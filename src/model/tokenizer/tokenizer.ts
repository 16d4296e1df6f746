// The tokenizer a model uses: built from GGUF metadata, dispatching to SPM or byte-level BPE, with
// llama.cpp's rules for special tokens, BOS/EOS and the SentencePiece space prefix.
import { byteEncode } from './byte-unicode.js';
import { bpeEncodeWord } from './bpe.js';
import { decodeTokens, StreamDecoder, tokenPiece, type DecodeOptions } from './decode.js';
import { HfEncoder } from './hf-encode.js';
import { Keys, metaString, type TokenizerMetadata } from './metadata.js';
import { preTokens } from './pretokenize.js';
import { partitionSpecial } from './special.js';
import { spmEncode } from './spm.js';
import { loadVocab, NO_TOKEN, type Vocab } from './vocab.js';

export interface EncodeOptions {
  /** Add BOS/EOS as the model's flags say (llama.cpp's add_special). Default true. */
  addSpecial?: boolean;
  /** Match control tokens like "<|im_start|>" written in the text (parse_special). Default false. */
  parseSpecial?: boolean;
}

export class Tokenizer {
  readonly vocab: Vocab;
  /** `tokenizer.chat_template`, when the file has one. */
  readonly chatTemplate: string | undefined;

  /** Hugging Face encoding rules, when the vocab came from tokenizer.json. */
  private readonly hf: HfEncoder | undefined;

  constructor(vocab: Vocab, chatTemplate?: string) {
    this.vocab = vocab;
    this.chatTemplate = chatTemplate;
    this.hf = vocab.hf ? new HfEncoder(vocab, vocab.hf) : undefined;
  }

  get size(): number {
    return this.vocab.tokens.length;
  }

  /** text -> ids, the same as llama.cpp's llama_tokenize(add_special, parse_special). */
  encode(text: string, opts: EncodeOptions = {}): number[] {
    const out: number[] = [];
    for (const _ of this.encodeSteps(text, opts, out));
    return out;
  }

  /**
   * encode() in steps: appends ids to `out` and yields after each pre-token (SPM: each special-token
   * fragment), so a caller can pause between steps or stop once `out` is long enough.
   */
  *encodeSteps(text: string, opts: EncodeOptions, out: number[]): Generator<void> {
    const v = this.vocab;
    const addSpecial = opts.addSpecial ?? true;
    if (addSpecial && v.addBos) out.push(v.bos);
    if (this.hf) {
      yield* this.hf.encodeSteps(text, opts.parseSpecial ?? false, out);
      if (addSpecial && v.addEos) out.push(v.eos);
      return;
    }
    // SentencePiece adds its space prefix at the start and again after every special token.
    let afterSpecial = true;
    for (const f of partitionSpecial(v, text, opts.parseSpecial ?? false)) {
      if (typeof f === 'number') {
        out.push(f);
        afterSpecial = true;
        continue;
      }
      if (v.model === 'llama') {
        const raw = v.addSpacePrefix && afterSpecial ? ' ' + f : f;
        spmEncode(v, raw.replaceAll(' ', '\u2581'), out);
        yield;
      } else {
        const raw = v.escapeWhitespace ? f.replaceAll(' ', '\u2581') : f;
        for (const word of preTokens(raw, v.pre!.patterns)) {
          bpeEncodeWord(v, v.pre!.byteLevel ? byteEncode(word) : word, out);
          yield;
        }
      }
      afterSpecial = false;
    }
    if (addSpecial && v.addEos) out.push(v.eos);
  }

  /** ids -> text (llama_detokenize). See DecodeOptions for special tokens and clean-up. */
  decode(ids: readonly number[], opts?: DecodeOptions): string {
    return decodeTokens(this.vocab, ids, opts);
  }

  /** Raw bytes of one token; may be part of a UTF-8 character. */
  piece(id: number, special = false): Uint8Array {
    return tokenPiece(this.vocab, id, special);
  }

  /** A decoder for generated ids that emits only whole characters. */
  stream(special = false): StreamDecoder {
    return new StreamDecoder(this.vocab, special);
  }

  /** True for tokens that end generation (EOS, EOT and the chat end markers llama.cpp knows). */
  isEog(id: number): boolean {
    return this.vocab.eog.has(id);
  }

  /** The text of a token as stored in the vocab (for chat templates and debugging). */
  tokenText(id: number): string | undefined {
    return id === NO_TOKEN ? undefined : this.vocab.tokens[id];
  }
}

/** Builds the tokenizer a GGUF file describes. */
export function createTokenizer(meta: TokenizerMetadata): Tokenizer {
  return new Tokenizer(loadVocab(meta), metaString(meta, Keys.chatTemplate));
}
