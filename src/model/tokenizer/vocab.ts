// The vocabulary built from GGUF tokenizer metadata: token texts, scores, types, merges, special ids and
// the BOS/EOS/space-prefix flags, with llama.cpp's defaults where a key is absent.
import { FileFormatError, UnknownTokenizerError } from '../../errors.js';
import { Keys, TokenType, metaBool, metaGet, metaNumbers, metaString, metaStrings, metaUint, type TokenizerMetadata, type TokenTypeId } from './metadata.js';
import { readHfPipeline, type HfPipeline } from './hf-pipeline.js';
import { getPreTokenizer, type PreTokenizer } from './pretokenize.js';

/** "No such token" (llama.cpp's LLAMA_TOKEN_NULL). */
export const NO_TOKEN = -1;

/** `tokenizer.ggml.model` values we implement. 'llama' is SentencePiece BPE; 'gpt2' byte-level BPE. */
export const TOKENIZER_MODELS = ['llama', 'gpt2', 'gemma4'] as const;
export type TokenizerModel = (typeof TOKENIZER_MODELS)[number];

// Texts llama.cpp treats as end-of-generation when present (and forces to control type).
const EOG_TEXTS = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '<|end_of_text|>',
  '<end_of_utterance>',
  '<|return|>',
  '<|call|>',
]);
// The subset that names the end-of-turn token when `tokenizer.ggml.eot_token_id` is absent.
const EOT_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>', '<EOT>'];

const utf8 = new TextEncoder();

export interface Vocab {
  readonly model: TokenizerModel;
  /** The BPE pre-tokenizer; null for 'llama' (SPM). */
  readonly pre: PreTokenizer | null;
  readonly tokens: readonly string[];
  readonly scores: Float32Array;
  readonly types: Uint8Array;
  /** Merge rank by `${left} ${right}` (BPE only; empty for SPM). */
  readonly mergeRanks: ReadonlyMap<string, number>;
  readonly bos: number;
  readonly eos: number;
  readonly eot: number;
  readonly unk: number;
  readonly pad: number;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSpacePrefix: boolean;
  /** Spaces become U+2581 before merging (SPM and gemma4). */
  readonly escapeWhitespace: boolean;
  readonly cleanSpaces: boolean;
  /** Ids matched verbatim in raw text (control, user-defined, unknown), longest text first. */
  readonly specialTokens: readonly number[];
  /** Ids that end generation. */
  readonly eog: ReadonlySet<number>;
  /** Id of the token whose text is exactly `text`, or NO_TOKEN. */
  id(text: string): number;
  /** Hugging Face encoding rules, for a vocab built from tokenizer.json (see hf-pipeline.ts). */
  readonly hf?: HfPipeline;
}

/** Builds the vocabulary; throws FileFormatError / UnknownTokenizerError on missing or malformed keys. */
export function loadVocab(meta: TokenizerMetadata): Vocab {
  const modelName = metaString(meta, Keys.model);
  if (modelName === undefined) throw new FileFormatError('tokenizer metadata', `missing ${Keys.model}`);
  if (!(TOKENIZER_MODELS as readonly string[]).includes(modelName)) {
    throw new UnknownTokenizerError('tokenizer model', modelName, TOKENIZER_MODELS);
  }
  const model = modelName as TokenizerModel;
  const isSpm = model === 'llama';

  const rawTokens = metaStrings(meta, Keys.tokens);
  if (rawTokens === undefined || rawTokens.length === 0) {
    throw new FileFormatError('tokenizer metadata', `missing or empty ${Keys.tokens}`);
  }
  const n = rawTokens.length;
  const tokens: string[] = new Array(n);
  const ids = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    // llama.cpp renames empty tokens so they can never match text.
    const t = rawTokens[i]! === '' ? `[EMPTY_${i}]` : rawTokens[i]!;
    if (ids.has(t)) throw new FileFormatError('tokenizer metadata', `duplicate token '${t}' at ids ${ids.get(t)} and ${i}`);
    ids.set(t, i);
    tokens[i] = t;
  }

  const scores = new Float32Array(n);
  const rawScores = metaNumbers(meta, Keys.scores, n);
  if (rawScores) for (let i = 0; i < n; i++) scores[i] = rawScores[i]!;

  const types = new Uint8Array(n).fill(TokenType.normal);
  const rawTypes = metaNumbers(meta, Keys.tokenType, n);
  if (rawTypes) {
    for (let i = 0; i < n; i++) {
      const t = rawTypes[i]!;
      types[i] = t >= 1 && t <= 6 ? t : TokenType.undefined;
    }
  }

  const pre = isSpm ? null : getPreTokenizer(model === 'gemma4' ? 'gemma4' : metaString(meta, Keys.pre));
  const hf = readHfPipeline(meta);
  const mergeRanks = new Map<string, number>();
  // SentencePiece-style vocabs from tokenizer.json keep their merges: HF encoding follows them exactly.
  if (!isSpm || (hf && metaGet(meta, Keys.merges) !== undefined)) {
    const merges = metaStrings(meta, Keys.merges);
    if (merges === undefined) throw new FileFormatError('tokenizer metadata', `BPE model needs ${Keys.merges}`);
    merges.forEach((m, rank) => {
      // Split at the first space after position 0, like llama.cpp; the first rank for a pair wins.
      const at = m.indexOf(' ', 1);
      const key = at < 0 ? ' ' : `${m.slice(0, at)} ${m.slice(at + 1)}`;
      if (!mergeRanks.has(key)) mergeRanks.set(key, rank);
    });
  }

  // Defaults per model (llama.cpp); a default outside the vocab is disabled.
  const inRange = (id: number) => (id >= 0 && id < n ? id : NO_TOKEN);
  const pick = (key: string, fallback: number) => {
    const v = metaUint(meta, key);
    return v !== undefined && v < n ? v : inRange(fallback);
  };
  const bos = pick(Keys.bos, isSpm ? 1 : model === 'gpt2' ? 11 : NO_TOKEN);
  const eos = pick(Keys.eos, isSpm ? 2 : model === 'gpt2' ? 11 : NO_TOKEN);
  const unk = pick(Keys.unk, isSpm ? 0 : NO_TOKEN);
  const pad = pick(Keys.pad, NO_TOKEN);
  let eot = pick(Keys.eot, NO_TOKEN);
  const eom = pick(Keys.eom, NO_TOKEN);
  if (eot === NO_TOKEN) {
    for (const text of EOT_TEXTS) {
      const id = ids.get(text);
      if (id !== undefined && (eot === NO_TOKEN || id < eot)) eot = id;
    }
  }

  const eog = new Set<number>();
  for (const id of [eos, eot, eom]) if (id !== NO_TOKEN) eog.add(id);
  for (const text of EOG_TEXTS) {
    const id = ids.get(text);
    if (id === undefined) continue;
    eog.add(id);
    // A control-looking token typed normal is a conversion bug; llama.cpp overrides its type.
    if (types[id] !== TokenType.control) types[id] = TokenType.control;
  }

  let addBos = metaBool(meta, Keys.addBos) ?? (isSpm || pre!.addBos);
  if (pre?.id === 'gemma4') addBos = true;
  const addEos = metaBool(meta, Keys.addEos) ?? false;
  const addSpacePrefix = metaBool(meta, Keys.addSpacePrefix) ?? isSpm;
  if (addBos && bos === NO_TOKEN) throw new FileFormatError('tokenizer metadata', `${Keys.addBos} is true but there is no BOS token`);
  if (addEos && eos === NO_TOKEN) throw new FileFormatError('tokenizer metadata', `${Keys.addEos} is true but there is no EOS token`);

  const specialTokens: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = types[i] as TokenTypeId;
    if (t === TokenType.control || t === TokenType.userDefined || t === TokenType.unknown) specialTokens.push(i);
  }
  const byteLen = new Map(specialTokens.map((i) => [i, utf8.encode(tokens[i]!).length]));
  specialTokens.sort((a, b) => byteLen.get(b)! - byteLen.get(a)! || a - b);

  return {
    model,
    pre,
    tokens,
    scores,
    types,
    mergeRanks,
    bos,
    eos,
    eot,
    unk,
    pad,
    addBos,
    addEos,
    addSpacePrefix,
    escapeWhitespace: isSpm || pre?.byteLevel === false,
    cleanSpaces: isSpm ? false : pre!.cleanSpaces,
    specialTokens,
    eog,
    id: (text: string) => ids.get(text) ?? NO_TOKEN,
    ...(hf ? { hf } : {}),
  };
}
