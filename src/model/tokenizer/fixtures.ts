// Test vocabularies: tiny hand-made ones whose tokenizations can be derived on paper, and "real-looking"
// ones trained here by plain BPE on a small corpus, so tests need no model files.
import { BYTE_TO_CHAR, byteEncode } from './byte-unicode.js';
import { Keys, TokenType } from './metadata.js';
import { getPreTokenizer, preTokenize } from './pretokenize.js';
import { byteTokenText } from './spm.js';

/** Training text: prose, code, numbers, punctuation runs and a little non-Latin script. */
export const CORPUS = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.',
  "One day, she saw a big, red ball in the park. \"Can I play with it?\" she asked. It's the best day!",
  "We're sure they'll come; you've seen it, haven't you? I'd say I'm ready.",
  'The year 2024 had 366 days, and 1234567 is a number. Prices: $3.50, 12% off, 7/8 done.',
  'function add(a, b) {\n    return a + b;\n}\n\nconst xs = [1, 2, 3].map((x) => x * 2);',
  'def main():\n\tprint("hello world")\n\tif x >= 10 and y <= 20:\n\t\treturn None',
  'Überall café naïve résumé straße. Ça va? Ελληνικά και русский текст тоже.',
  '日本語のテキストと中文文本。한국어 문장도 있어요.',
  'the the the and and and of of to to in in is is it it that that was was for for on on',
  '    indented    text   with   runs     of spaces\n\n\n and newlines\r\n too.',
].join('\n');

/** Learns up to `count` merges by pair frequency (ties by pair text, so the result is deterministic). */
export function trainMerges(words: readonly string[][], count: number): [string, string][] {
  const tally = new Map<string, { syms: string[]; n: number }>();
  for (const w of words) {
    const key = w.join('\u0000');
    const t = tally.get(key);
    if (t) t.n++;
    else tally.set(key, { syms: [...w], n: 1 });
  }
  const merges: [string, string][] = [];
  while (merges.length < count) {
    const pairs = new Map<string, number>();
    for (const { syms, n } of tally.values()) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = syms[i] + '\u0000' + syms[i + 1];
        pairs.set(k, (pairs.get(k) ?? 0) + n);
      }
    }
    let best: string | undefined;
    let bestN = 0;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && best !== undefined && k < best)) [best, bestN] = [k, n];
    if (best === undefined) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    for (const t of tally.values()) {
      const out: string[] = [];
      for (let i = 0; i < t.syms.length; i++) {
        if (i + 1 < t.syms.length && t.syms[i] === a && t.syms[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(t.syms[i]!);
      }
      t.syms = out;
    }
  }
  return merges;
}

export interface SpecialSpec {
  text: string;
  type: number;
}

/** Chat-style specials every trained vocab carries (control) plus one user-defined token. */
export const CHAT_SPECIALS: readonly SpecialSpec[] = [
  { text: '<|im_start|>', type: TokenType.control },
  { text: '<|im_end|>', type: TokenType.control },
  { text: '<|endoftext|>', type: TokenType.control },
  { text: '<tool>', type: TokenType.userDefined },
];

export interface BpeOptions {
  pre: string;
  merges?: number;
  /** Whole tokens no merge path reaches (to exercise ignore_merges). */
  extraTokens?: string[];
  extra?: Record<string, unknown>;
}

/** A byte-level BPE vocab ('gpt2' model): 256 byte characters, trained merges, chat specials. */
export function trainedBpeMetadata(opts: BpeOptions): Map<string, unknown> {
  const words = preTokenize(CORPUS, getPreTokenizer(opts.pre).patterns).map((w) => Array.from(byteEncode(w)));
  const merges = trainMerges(words, opts.merges ?? 400);
  const tokens: string[] = [...BYTE_TO_CHAR];
  const seen = new Set(tokens);
  for (const t of [...merges.map(([a, b]) => a + b), ...(opts.extraTokens ?? []).map(byteEncode)]) {
    if (!seen.has(t)) tokens.push(t), seen.add(t);
  }
  const types = tokens.map(() => TokenType.normal as number);
  for (const s of CHAT_SPECIALS) tokens.push(s.text), types.push(s.type);
  const eos = tokens.indexOf('<|endoftext|>');
  return new Map<string, unknown>([
    [Keys.model, 'gpt2'],
    [Keys.pre, opts.pre],
    [Keys.tokens, tokens],
    [Keys.tokenType, Int32Array.from(types)],
    [Keys.merges, merges.map(([a, b]) => `${a} ${b}`)],
    [Keys.bos, eos],
    [Keys.eos, eos],
    ...Object.entries(opts.extra ?? {}),
  ]);
}

export interface SpmOptions {
  /** 'gemma4' writes the same pieces as SPM-style BPE: model gemma4 with the merges listed. */
  model?: 'llama' | 'gemma4';
  merges?: number;
  addSpacePrefix?: boolean;
  extra?: Record<string, unknown>;
}

/**
 * A SentencePiece-style vocab ('llama' model) laid out like Llama's: <unk> <s> </s>, 256 byte tokens, then
 * pieces by falling score, then single characters. Newlines and rare characters are left to byte fallback.
 */
export function trainedSpmMetadata(opts: SpmOptions = {}): Map<string, unknown> {
  const text = CORPUS.replace(/[\r\n]+/g, ' ');
  const words = ('\u2581' + text.replaceAll(' ', '\u2581')).split(/(?=\u2581)/).map((w) => Array.from(w));
  const merges = trainMerges(words, opts.merges ?? 400);
  const tokens = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TokenType.unknown, TokenType.control, TokenType.control];
  const scores = [0, 0, 0];
  for (let b = 0; b < 256; b++) tokens.push(byteTokenText(b)), types.push(TokenType.byte), scores.push(0);
  const seen = new Set(tokens);
  const add = (t: string, score: number) => {
    if (seen.has(t)) return;
    seen.add(t);
    tokens.push(t), types.push(TokenType.normal), scores.push(score);
  };
  merges.forEach(([a, b], i) => add(a + b, -i));
  // Characters rarer than a handful of uses stay out, so byte fallback is exercised on real text too.
  const counts = new Map<string, number>();
  for (const w of words) for (const c of w) counts.set(c, (counts.get(c) ?? 0) + 1);
  [...counts].filter(([, n]) => n >= 3).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).forEach(([c], i) => add(c, -1e4 - i));
  const gemma4 = opts.model === 'gemma4';
  if (gemma4) add('\n', -2e4), add('\n\n', -2e4 - 1);
  for (const s of [{ text: '<start_of_turn>', type: TokenType.control }, { text: '<end_of_turn>', type: TokenType.control }]) {
    tokens.push(s.text), types.push(s.type), scores.push(0);
  }
  return new Map<string, unknown>([
    [Keys.model, opts.model ?? 'llama'],
    ...(gemma4 ? ([[Keys.merges, merges.map(([a, b]) => `${a} ${b}`)]] as [string, unknown][]) : []),
    [Keys.tokens, tokens],
    [Keys.scores, Float32Array.from(scores)],
    [Keys.tokenType, Int32Array.from(types)],
    [Keys.bos, 1],
    [Keys.eos, 2],
    [Keys.unk, 0],
    ...(opts.addSpacePrefix === undefined ? [] : ([[Keys.addSpacePrefix, opts.addSpacePrefix]] as [string, unknown][])),
    ...Object.entries(opts.extra ?? {}),
  ]);
}

/** Strings for round trips and cross-checks: Unicode, whitespace runs, specials, digits, code. */
export const SAMPLES: readonly string[] = [
  '',
  ' ',
  '  ',
  '\n',
  'Hello world',
  ' Hello world',
  '   leading spaces',
  'trailing spaces   ',
  'a  b   c    d',
  'tabs\tand\t\ttabs',
  'line one\nline two\n\nline four\r\nwindows',
  '\n\n\n  \n x',
  'Once upon a time, there was a little girl named Lily.',
  "It's we're they'll I'd you've I'M IT'S",
  'numbers 1 12 123 1234 12345 3.14159 -42 1,000,000',
  'punctuation!!! ??? ... ,,, ;; -- (( )) [[ ]] {{ }} $$ %% ^^ ~~ || <=> `code`',
  'function add(a, b) {\n    return a + b;\n}',
  'Überall café naïve résumé straße',
  '日本語のテキスト 中文文本 한국어',
  'emoji 😀🎉👍🏽 and family 👨‍👩‍👧 and flags 🇯🇵',
  'combining e\u0301 a\u0308 n\u0303 and precomposed é ä ñ',
  'nbsp\u00a0here, ideographic\u3000space, nel\u0085char, bom\ufeffchar',
  '\ufeffleading byte order mark',
  'zero\u200bwidth and rtl שלום عربى',
  'mixed 42abc abc42 a1b2c3',
  '<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n',
  'not special: <|im_start without end, <tool> user defined',
  '<start_of_turn>user\nhello<end_of_turn>',
  'x'.repeat(50) + ' ' + 'ab'.repeat(30),
];
