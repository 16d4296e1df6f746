// Synthetic tokenizer.json files for tests, laid out as Hugging Face writes them for GPT-2, Qwen2,
// Llama 3 (byte-level BPE) and Llama 2, Mistral (SentencePiece-style BPE with byte fallback), with merges
// learned here by plain BPE on a small corpus so no model files are needed.
import { BYTE_TO_CHAR, byteEncode } from '../model/tokenizer/byte-unicode.js';
import { CORPUS, trainMerges } from '../model/tokenizer/fixtures.js';
import { getPreTokenizer, preTokenize } from '../model/tokenizer/pretokenize.js';
import { byteTokenText } from '../model/tokenizer/spm.js';

type Json = Record<string, unknown>;

/** The Split regexes of Llama 3's and Qwen2's tokenizer.json, verbatim. */
export const LLAMA3_SPLIT = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
export const QWEN2_SPLIT = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

export interface AddedSpec {
  content: string;
  special: boolean;
  normalized?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
}

/** One synthetic model directory's files: tokenizer.json and tokenizer_config.json. */
export interface HfFixture {
  tokenizer: Json;
  tokenizerConfig: Json;
}

function added(specs: readonly AddedSpec[], firstId: number): Json[] {
  return specs.map((s, i) => ({
    id: firstId + i,
    content: s.content,
    single_word: false,
    lstrip: s.lstrip ?? false,
    rstrip: s.rstrip ?? false,
    normalized: s.normalized ?? !s.special,
    special: s.special,
  }));
}

const template = (bos: string | null) =>
  bos === null
    ? { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }
    : {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: {},
      };

export interface ByteLevelStyle {
  /** 'gpt-2': ByteLevel with its own regex; 'qwen2' / 'llama-bpe': Split with the model's regex; 'smollm': Digits first. */
  pre: 'gpt-2' | 'qwen2' | 'llama-bpe' | 'smollm';
  merges: number;
  specials: readonly AddedSpec[];
  /** BOS the post-processor adds (Llama 3), or null. */
  bos: string | null;
  eos: string;
  normalizer?: Json | null;
  ignoreMerges?: boolean;
  /** Whole words added to the vocab that no merge reaches (ignore_merges takes them). */
  extraTokens?: readonly string[];
}

/** A byte-level BPE tokenizer.json: the 256 byte characters, trained merges, then the added tokens. */
export function byteLevelFixture(style: ByteLevelStyle): HfFixture {
  const engineName = style.pre === 'llama-bpe' ? 'llama3' : style.pre;
  const words = preTokenize(CORPUS, getPreTokenizer(engineName).patterns).map((w) => Array.from(byteEncode(w)));
  const merges = trainMerges(words, style.merges);
  const vocab: Record<string, number> = {};
  const add = (t: string) => {
    if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  };
  BYTE_TO_CHAR.forEach(add);
  merges.forEach(([a, b]) => add(a + b));
  (style.extraTokens ?? []).map(byteEncode).forEach(add);
  const split = style.pre === 'qwen2' ? QWEN2_SPLIT : LLAMA3_SPLIT;
  const ownRegex = style.pre === 'gpt-2' || style.pre === 'smollm';
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: ownRegex };
  const first = style.pre === 'smollm' ? { type: 'Digits', individual_digits: true } : { type: 'Split', pattern: { Regex: split }, behavior: 'Isolated', invert: false };
  const preTokenizer = style.pre === 'gpt-2' ? byteLevel : { type: 'Sequence', pretokenizers: [first, byteLevel] };
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added(style.specials, Object.keys(vocab).length),
    normalizer: style.normalizer ?? null,
    pre_tokenizer: preTokenizer,
    post_processor: template(style.bos),
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: style.ignoreMerges ?? false,
      vocab,
      merges: merges.map(([a, b]) => [a, b]),
    },
  };
  return {
    tokenizer,
    tokenizerConfig: {
      add_prefix_space: false,
      bos_token: style.bos,
      eos_token: style.eos,
      clean_up_tokenization_spaces: false,
      model_max_length: 1024,
      tokenizer_class: 'PreTrainedTokenizerFast',
    },
  };
}

export interface SpmStyle {
  /**
   * 'llama2': normalizer Prepend + Replace; 'mistral': Metaspace pre-tokenizer (prepend_scheme first);
   * 'gemma': Replace only (no prefix), then a Split on " " that finds nothing left to split.
   */
  kind: 'llama2' | 'mistral' | 'gemma';
  merges: number;
  /** Extra added tokens after <unk> <s> </s>. */
  specials: readonly AddedSpec[];
}

/**
 * A SentencePiece-style BPE tokenizer.json (byte_fallback): <unk> <s> </s>, the 256 <0xXX> tokens, the
 * corpus's frequent characters, then merge products; rare characters are left to byte fallback.
 */
export function spmFixture(style: SpmStyle): HfFixture {
  const text = CORPUS.replace(/[\r\n]+/g, ' ');
  const words = ('\u2581' + text.replaceAll(' ', '\u2581')).split(/(?=\u2581)/).map((w) => Array.from(w));
  const counts = new Map<string, number>();
  for (const w of words) for (const c of w) counts.set(c, (counts.get(c) ?? 0) + 1);
  const frequent = new Set([...counts].filter(([, n]) => n >= 3).map(([c]) => c));
  // Merges only over frequent characters, as sentencepiece's character coverage would leave them.
  const merges = trainMerges(words.map((w) => w.filter((c) => frequent.has(c))), style.merges);
  const vocab: Record<string, number> = {};
  const add = (t: string) => {
    if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  };
  ['<unk>', '<s>', '</s>'].forEach(add);
  for (let b = 0; b < 256; b++) add(byteTokenText(b));
  [...frequent].sort().forEach(add);
  merges.forEach(([a, b]) => add(a + b));
  const base: AddedSpec[] = [
    { content: '<unk>', special: true, normalized: false },
    { content: '<s>', special: true, normalized: false },
    { content: '</s>', special: true, normalized: false },
  ];
  const addedTokens = [...added(base, 0), ...added(style.specials, Object.keys(vocab).length)];
  const llama2 = style.kind === 'llama2';
  const gemma = style.kind === 'gemma';
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: llama2
      ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '\u2581' }, { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] }
      : gemma
        ? { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }
        : null,
    pre_tokenizer: llama2
      ? null
      : gemma
        ? { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false }
        : { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
    post_processor: template('<s>'),
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(gemma ? [] : [{ type: 'Strip', content: ' ', start: 1, stop: 0 }]),
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges: merges.map(([a, b]) => `${a} ${b}`),
    },
  };
  return {
    tokenizer,
    tokenizerConfig: {
      add_bos_token: true,
      add_eos_token: false,
      bos_token: '<s>',
      eos_token: '</s>',
      unk_token: '<unk>',
      clean_up_tokenization_spaces: false,
      legacy: style.kind === 'llama2',
      tokenizer_class: 'LlamaTokenizer',
    },
  };
}
