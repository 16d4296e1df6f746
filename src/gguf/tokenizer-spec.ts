// Tokenizer facts a GGUF file carries, shared by the side that writes them (hf/ conversion from
// tokenizer.json) and the side that reads them (model/tokenizer): here so neither imports the other.

/** `tokenizer.ggml.token_type` values (llama.cpp's LLAMA_TOKEN_TYPE_*). */
export const TokenType = {
  undefined: 0,
  normal: 1,
  unknown: 2,
  control: 3,
  userDefined: 4,
  unused: 5,
  byte: 6,
} as const;
export type TokenTypeId = (typeof TokenType)[keyof typeof TokenType];

/** The metadata key holding the JSON-encoded HfPipeline. */
export const HF_PIPELINE_KEY = 'tokenizer.hf.pipeline';

/** One normalizer step, applied in order to every stretch of text between added tokens. */
export type NormalizerStep =
  | { type: 'prepend'; text: string }
  | { type: 'replace'; from: string; to: string }
  /** A regex replacement; `pattern` is a JS regex source compiled with 'gu'. */
  | { type: 'replaceRegex'; pattern: string; to: string }
  | { type: 'unicode'; form: 'NFC' | 'NFD' | 'NFKC' | 'NFKD' }
  | { type: 'lowercase' }
  | { type: 'strip'; left: boolean; right: boolean };

/** HF's Metaspace pre-tokenizer: spaces become `replacement`, optionally prefixed, optionally split. */
export interface Metaspace {
  readonly replacement: string;
  /** 'first': only the text before any added token gets the prefix. */
  readonly prepend: 'always' | 'first' | 'never';
  /** Split before every `replacement` (each word keeps its leading one). */
  readonly split: boolean;
}

/** An entry of tokenizer.json's added_tokens, by id. */
export interface AddedTokenFlags {
  readonly id: number;
  /** Matched in normalized text (its content normalized too) rather than in the raw text. */
  readonly normalized: boolean;
  /** Whitespace to the left / right of a match is dropped. */
  readonly lstrip: boolean;
  readonly rstrip: boolean;
  /** Matches only where no word character touches it. */
  readonly singleWord: boolean;
  /** A special token: only matched when the caller parses special tokens. */
  readonly special: boolean;
}

export interface HfPipeline {
  readonly normalizer: readonly NormalizerStep[];
  /** SentencePiece-style BPE only; null when the tokenizer has no Metaspace pre-tokenizer. */
  readonly metaspace: Metaspace | null;
  /** Byte-level BPE: ByteLevel's add_prefix_space (a space before text that lacks one). */
  readonly addPrefixSpace: boolean;
  readonly addedTokens: readonly AddedTokenFlags[];
  /** A whole pre-token that is in the vocab is taken as is (BPE ignore_merges). */
  readonly ignoreMerges: boolean;
  /** Characters missing from the vocab become <0xXX> byte tokens when all of those exist. */
  readonly byteFallback: boolean;
  /** Consecutive unknown pieces become one <unk> (BPE fuse_unk). */
  readonly fuseUnk: boolean;
}
