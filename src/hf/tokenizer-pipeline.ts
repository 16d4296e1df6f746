// tokenizer.json's normalizer and pre-tokenizer, translated into what the engine runs: normalizer steps,
// a Metaspace pre-tokenizer (SentencePiece-style BPE) or one of the engine's named byte-level
// pre-tokenizers, chosen by the exact regex text the file declares.
import { UnsupportedTokenizerError } from '../errors.js';
import type { Metaspace, NormalizerStep } from '../gguf/tokenizer-spec.js';

const WHERE = 'tokenizer.json';
type Json = Record<string, unknown>;

const NORMALIZERS = ['Sequence', 'Prepend', 'Replace', 'NFC', 'NFD', 'NFKC', 'NFKD', 'Lowercase', 'Strip'];
const PRE_TOKENIZERS = ['Sequence', 'Metaspace', 'ByteLevel', 'Split (with a known regex)', 'Digits (individual)'];

/** The regex HF's ByteLevel pre-tokenizer applies when use_regex is true (GPT-2's). */
export const BYTE_LEVEL_REGEX = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`;

/** Digits with individual_digits: every digit (Unicode Numeric, as Rust's is_numeric) on its own. */
const INDIVIDUAL_DIGITS = String.raw`\p{N}`;

/**
 * Byte-level split regexes as tokenizer.json spells them -> the `tokenizer.ggml.pre` name llama.cpp
 * writes for them. Each row's engine pre-tokenizer runs the same regex (with `\s` as Unicode White_Space).
 */
const NAMED_REGEXES: readonly { regexes: readonly string[]; pre: string }[] = [
  { regexes: [BYTE_LEVEL_REGEX], pre: 'gpt-2' },
  {
    regexes: [String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`],
    pre: 'llama-bpe',
  },
  {
    regexes: [String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`],
    pre: 'qwen2',
  },
  // SmolLM: Digits(individual_digits) then ByteLevel with its regex.
  { regexes: [INDIVIDUAL_DIGITS, BYTE_LEVEL_REGEX], pre: 'smollm' },
];

/** The declared normalizer as engine steps; null in the file means none. */
export function normalizerSteps(config: unknown): NormalizerStep[] {
  if (config === null || config === undefined) return [];
  const n = config as Json;
  const type = String(n.type);
  switch (type) {
    case 'Sequence':
      if (!Array.isArray(n.normalizers)) throw new UnsupportedTokenizerError(WHERE, 'normalizer', 'Sequence without normalizers', NORMALIZERS);
      return n.normalizers.flatMap(normalizerSteps);
    case 'Prepend':
      return [{ type: 'prepend', text: String(n.prepend ?? '') }];
    case 'Replace':
      return [replaceStep(n)];
    case 'NFC':
    case 'NFD':
    case 'NFKC':
    case 'NFKD':
      return [{ type: 'unicode', form: type }];
    case 'Lowercase':
      return [{ type: 'lowercase' }];
    case 'Strip':
      return [{ type: 'strip', left: n.strip_left !== false, right: n.strip_right !== false }];
    default:
      throw new UnsupportedTokenizerError(WHERE, 'normalizer', type, NORMALIZERS);
  }
}

function replaceStep(n: Json): NormalizerStep {
  const pattern = (n.pattern ?? {}) as Json;
  const to = String(n.content ?? '');
  if (typeof pattern.String === 'string') return { type: 'replace', from: pattern.String, to };
  if (typeof pattern.Regex === 'string') {
    try {
      new RegExp(pattern.Regex, 'gu');
    } catch {
      throw new UnsupportedTokenizerError(WHERE, 'Replace normalizer regex', pattern.Regex, ['JavaScript-compatible regexes']);
    }
    return { type: 'replaceRegex', pattern: pattern.Regex, to };
  }
  throw new UnsupportedTokenizerError(WHERE, 'Replace normalizer pattern', JSON.stringify(pattern), ['String', 'Regex']);
}

/** What the pre-tokenizer declares, in engine terms. */
export type PreTokenization =
  | { kind: 'none' }
  | { kind: 'metaspace'; metaspace: Metaspace }
  /** Byte-level BPE with one of the engine's named pre-tokenizers. */
  | { kind: 'byteLevel'; pre: string; addPrefixSpace: boolean };

/**
 * Flattens Sequence and classifies the declared pre-tokenizer; anything we cannot run exactly throws.
 * `normalizer` is what runs before it: a literal Split on text the normalizer already replaced does nothing.
 */
export function preTokenization(config: unknown, normalizer: readonly NormalizerStep[] = []): PreTokenization {
  if (config === null || config === undefined) return { kind: 'none' };
  const steps = flatten(config as Json).filter((s) => !splitsRemovedText(s, normalizer));
  if (steps.length === 0) return { kind: 'none' };
  const metaspaces = steps.filter((s) => s.type === 'Metaspace');
  const byteLevels = steps.filter((s) => s.type === 'ByteLevel');
  for (const s of steps) {
    if (!['Metaspace', 'ByteLevel', 'Split', 'Digits'].includes(String(s.type))) {
      throw new UnsupportedTokenizerError(WHERE, 'pre-tokenizer', String(s.type), PRE_TOKENIZERS);
    }
  }
  if (metaspaces.length > 0) {
    if (steps.length > 1) throw unsupportedCombination(steps);
    return { kind: 'metaspace', metaspace: metaspaceOf(metaspaces[0]!) };
  }
  if (byteLevels.length !== 1 || steps.at(-1) !== byteLevels[0]) throw unsupportedCombination(steps);
  const bl = byteLevels[0]!;
  const regexes = steps.slice(0, -1).map(stepRegex);
  if (bl.use_regex !== false) regexes.push(BYTE_LEVEL_REGEX);
  const row = NAMED_REGEXES.find((r) => r.regexes.length === regexes.length && r.regexes.every((x, i) => x === regexes[i]));
  if (!row) {
    throw new UnsupportedTokenizerError(
      WHERE,
      'pre-tokenizer regex',
      regexes.join(' then '),
      NAMED_REGEXES.map((r) => r.pre),
    );
  }
  return { kind: 'byteLevel', pre: row.pre, addPrefixSpace: bl.add_prefix_space === true };
}

// Gemma: Split(" ") after a normalizer that turned every " " into U+2581 (and put none back).
function splitsRemovedText(s: Json, normalizer: readonly NormalizerStep[]): boolean {
  const literal = ((s.pattern ?? {}) as Json).String;
  if (s.type !== 'Split' || typeof literal !== 'string' || literal === '') return false;
  const at = normalizer.findLastIndex((n) => n.type === 'replace' && n.from === literal);
  // Later steps must not bring it back (compatibility forms can: NFKC turns U+00A0 into a space).
  const keepsOut = (n: NormalizerStep) =>
    n.type === 'replace' ? !n.to.includes(literal) : n.type === 'prepend' ? !n.text.includes(literal) : n.type === 'lowercase' || n.type === 'strip';
  return at >= 0 && normalizer.slice(at).every(keepsOut);
}

function flatten(n: Json): Json[] {
  if (n.type !== 'Sequence') return [n];
  if (!Array.isArray(n.pretokenizers)) throw new UnsupportedTokenizerError(WHERE, 'pre-tokenizer', 'Sequence without pretokenizers', PRE_TOKENIZERS);
  return (n.pretokenizers as Json[]).flatMap(flatten);
}

function unsupportedCombination(steps: Json[]): UnsupportedTokenizerError {
  return new UnsupportedTokenizerError(WHERE, 'pre-tokenizer sequence', steps.map((s) => s.type).join(' + '), ['Metaspace', 'ByteLevel', 'Split + ByteLevel']);
}

// A Split (or Digits) step we can run: a regex whose matches are kept as pieces of their own, text between
// them too.
function stepRegex(s: Json): string {
  if (s.type === 'Digits') {
    if (s.individual_digits === true) return INDIVIDUAL_DIGITS;
    throw new UnsupportedTokenizerError(WHERE, 'pre-tokenizer', 'Digits without individual_digits', PRE_TOKENIZERS);
  }
  const pattern = (s.pattern ?? {}) as Json;
  const behavior = String(s.behavior ?? 'Isolated');
  if (s.type !== 'Split' || typeof pattern.Regex !== 'string' || behavior !== 'Isolated' || s.invert === true) {
    throw new UnsupportedTokenizerError(WHERE, 'pre-tokenizer split', JSON.stringify({ pattern, behavior, invert: s.invert }), [
      'Split with an Isolated Regex',
    ]);
  }
  return pattern.Regex;
}

function metaspaceOf(s: Json): Metaspace {
  const replacement = typeof s.replacement === 'string' && s.replacement.length > 0 ? s.replacement : '\u2581';
  // Older files say add_prefix_space instead of prepend_scheme.
  const scheme = s.prepend_scheme ?? (s.add_prefix_space === false ? 'never' : 'always');
  if (scheme !== 'always' && scheme !== 'first' && scheme !== 'never') {
    throw new UnsupportedTokenizerError(WHERE, 'Metaspace prepend_scheme', String(scheme), ['always', 'first', 'never']);
  }
  // Rust's default for a missing `split` is true (older files always split at the replacement).
  return { replacement, prepend: scheme, split: s.split !== false };
}
