// Hugging Face tokenizer semantics that llama.cpp's tokenizer.ggml.* keys cannot express: normalizer
// steps, the Metaspace pre-tokenizer, added-token flags and unknown-token fusing. A tokenizer built from
// tokenizer.json carries them in one JSON metadata key, so it encodes as transformers does; GGUF files
// without the key keep llama.cpp's rules (and llama.cpp ignores the key).
import { FileFormatError } from '../../errors.js';
import { metaString, type TokenizerMetadata } from './metadata.js';

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

const KIND = 'tokenizer metadata';
const FORMS = ['NFC', 'NFD', 'NFKC', 'NFKD'];

/** The pipeline stored under HF_PIPELINE_KEY, or undefined when the metadata has none. */
export function readHfPipeline(meta: TokenizerMetadata): HfPipeline | undefined {
  const text = metaString(meta, HF_PIPELINE_KEY);
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new FileFormatError(KIND, `${HF_PIPELINE_KEY} is not valid JSON`);
  }
  const bad = (what: string) => new FileFormatError(KIND, `${HF_PIPELINE_KEY}: ${what}`);
  const p = raw as HfPipeline;
  if (typeof p !== 'object' || p === null || !Array.isArray(p.normalizer) || !Array.isArray(p.addedTokens)) {
    throw bad('needs normalizer and addedTokens arrays');
  }
  for (const step of p.normalizer) {
    if (step.type === 'unicode' && !FORMS.includes(step.form)) throw bad(`unknown unicode form '${step.form}'`);
    if (!['prepend', 'replace', 'replaceRegex', 'unicode', 'lowercase', 'strip'].includes(step.type)) {
      throw bad(`unknown normalizer step '${(step as { type: string }).type}'`);
    }
  }
  for (const t of p.addedTokens) if (!Number.isInteger(t.id) || t.id < 0) throw bad(`added token id ${t.id}`);
  const ms = p.metaspace;
  if (ms && (typeof ms.replacement !== 'string' || ms.replacement.length === 0 || !['always', 'first', 'never'].includes(ms.prepend))) {
    throw bad('metaspace needs a replacement and prepend always|first|never');
  }
  return {
    normalizer: p.normalizer,
    metaspace: p.metaspace ?? null,
    addPrefixSpace: p.addPrefixSpace === true,
    addedTokens: p.addedTokens,
    ignoreMerges: p.ignoreMerges === true,
    byteFallback: p.byteFallback === true,
    fuseUnk: p.fuseUnk === true,
  };
}

/** The normalizer as one function; compiles regex steps once. */
export function normalizerOf(steps: readonly NormalizerStep[]): (text: string) => string {
  const fns = steps.map((s): ((t: string) => string) => {
    switch (s.type) {
      case 'prepend':
        return (t) => (t.length > 0 ? s.text + t : t);
      case 'replace':
        return (t) => t.replaceAll(s.from, s.to);
      case 'replaceRegex': {
        const re = new RegExp(s.pattern, 'gu');
        return (t) => t.replace(re, s.to);
      }
      case 'unicode':
        return (t) => t.normalize(s.form);
      case 'lowercase':
        return (t) => t.toLowerCase();
      case 'strip':
        return (t) => (s.left && s.right ? t.trim() : s.left ? t.trimStart() : s.right ? t.trimEnd() : t);
    }
  });
  return (text) => fns.reduce((t, f) => f(t), text);
}
