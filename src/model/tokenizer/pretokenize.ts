// Pre-tokenizers for byte-level BPE, chosen by `tokenizer.ggml.pre` as llama.cpp does (llama-vocab.cpp).
// Each regex in a list splits every piece the previous one produced; text between matches is kept as its
// own piece, so nothing is ever dropped.
import { DefinitionError, UnknownTokenizerError } from '../../errors.js';

// Unicode White_Space, the set llama.cpp's `\s` means. JS `\s` differs (adds U+FEFF, lacks U+0085).
const WS = String.raw`\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000`;
const s = `[${WS}]`;
const S = `[^${WS}]`;

// Contractions spelled case-insensitively: JS (Node 20) has no inline `(?i:...)`.
const CONTRACTIONS_CI = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`;
const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^${WS}\p{L}\p{N}]+|${s}+(?!${S})`;
const LLAMA3 = CONTRACTIONS_CI + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^${WS}\p{L}\p{N}]+[\r\n]*|${s}*[\r\n]+|${s}+(?!${S})|${s}+`;
const QWEN2 = CONTRACTIONS_CI + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^${WS}\p{L}\p{N}]+[\r\n]*|${s}*[\r\n]+|${s}+(?!${S})|${s}+`;
const QWEN35 = CONTRACTIONS_CI + String.raw`|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^${WS}\p{L}\p{M}\p{N}]+[\r\n]*|${s}*[\r\n]+|${s}+(?!${S})|${s}+`;

export interface PreTokenizer {
  /** Canonical id (llama.cpp's LLAMA_VOCAB_PRE_TYPE_* in lower case). */
  readonly id: string;
  /** `tokenizer.ggml.pre` values that select it. */
  readonly names: readonly string[];
  readonly patterns: readonly RegExp[];
  /** A whole pre-token that is already in the vocab is emitted without merging (llama3 family). */
  readonly ignoreMerges: boolean;
  /** Default for add_bos before `tokenizer.ggml.add_bos_token` overrides it. */
  readonly addBos: boolean;
  /** llama.cpp's clean_spaces: detokenize drops the space in " ." " 's" etc. */
  readonly cleanSpaces: boolean;
  /** false for SPM-style BPE (gemma4): raw UTF-8 with spaces as U+2581 and <0xXX> byte tokens. */
  readonly byteLevel: boolean;
}

function pre(
  id: string,
  names: string[],
  patterns: string[],
  flags: Partial<Pick<PreTokenizer, 'ignoreMerges' | 'addBos' | 'cleanSpaces' | 'byteLevel'>> = {},
): PreTokenizer {
  return {
    id,
    names,
    patterns: patterns.map((p) => new RegExp(p, 'gu')),
    ignoreMerges: flags.ignoreMerges ?? false,
    addBos: flags.addBos ?? false,
    cleanSpaces: flags.cleanSpaces ?? true,
    byteLevel: flags.byteLevel ?? true,
  };
}

/** The table; one row per llama.cpp pre-tokenizer type we support. */
export const PRE_TOKENIZERS: readonly PreTokenizer[] = [
  pre('default', ['default'], [String.raw`[\p{P}\$\+<=>\^~\|]+`, GPT2, String.raw`\p{N}+`, '[0-9][0-9][0-9]']),
  pre('llama3', ['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2'], [LLAMA3], {
    ignoreMerges: true,
    addBos: true,
  }),
  pre('dbrx', ['dbrx', 'smaug-bpe'], [LLAMA3]),
  pre('gpt2', ['gpt-2', 'gpt2', 'phi-2', 'mpt', 'olmo', 'jais', 'exaone4'], [GPT2]),
  pre('falcon', ['falcon'], [String.raw`[\p{P}\$\+<=>\^~\|\x60]+`, GPT2, '[0-9][0-9][0-9]']),
  pre('starcoder', ['starcoder', 'refact', 'codeshell', 'exaone', 'minerva-7b'], [String.raw`\p{N}`, GPT2]),
  pre('smollm', ['smollm', 'command-r'], [String.raw`\p{N}`, GPT2], { cleanSpaces: false }),
  pre('qwen2', ['qwen2', 'deepseek-r1-qwen', 'megrez'], [QWEN2], { cleanSpaces: false }),
  pre('stablelm2', ['stablelm2'], [QWEN2]),
  pre('qwen35', ['qwen35'], [QWEN35], { cleanSpaces: false }),
  // Gemma 4: merges run over whole lines (newline runs apart); add_bos is forced on, as llama.cpp does.
  pre('gemma4', ['gemma4'], ['[^\\n]+|[\\n]+'], { byteLevel: false, addBos: true }),
];

const byName = new Map<string, PreTokenizer>();
for (const p of PRE_TOKENIZERS) {
  for (const n of p.names) {
    if (byName.has(n)) throw new DefinitionError(`pre-tokenizer name '${n}' listed twice`);
    byName.set(n, p);
  }
}

/** Looks up a pre-tokenizer by its GGUF name; a missing name means 'default' (as llama.cpp, which warns). */
export function getPreTokenizer(name: string | undefined): PreTokenizer {
  const p = byName.get(name === undefined || name === '' ? 'default' : name);
  if (!p) throw new UnknownTokenizerError('pre-tokenizer', name!, [...byName.keys()]);
  return p;
}

/** Splits `text` into pre-tokens: every regex refines the pieces of the one before. */
export function preTokenize(text: string, patterns: readonly RegExp[]): string[] {
  return Array.from(preTokens(text, patterns));
}

/** The pre-tokens of `text` one at a time (matchAll is lazy): a long text is split as it is consumed. */
export function* preTokens(text: string, patterns: readonly RegExp[], level = 0): Generator<string> {
  if (text.length === 0) return;
  const re = patterns[level];
  if (re === undefined) {
    yield text;
    return;
  }
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    if (m.index > last) yield* preTokens(text.slice(last, m.index), patterns, level + 1);
    yield* preTokens(m[0], patterns, level + 1);
    last = m.index + m[0].length;
  }
  if (last < text.length) yield* preTokens(text.slice(last), patterns, level + 1);
}
