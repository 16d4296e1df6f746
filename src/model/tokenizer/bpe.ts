// Byte-level BPE ('gpt2' model) over one pre-token: start from single characters of its byte-level
// spelling and apply the lowest-ranked merge present until none applies.
import { Heap } from './heap.js';
import { byteTokenText } from './spm.js';
import { NO_TOKEN, type Vocab } from './vocab.js';

interface Bigram {
  left: number;
  right: number;
  rank: number;
  /** left + right text when queued; stale entries no longer match. */
  text: string;
}

// Lowest rank first; equal ranks (the same pair twice) merge leftmost first.
const before = (a: Bigram, b: Bigram) => a.rank < b.rank || (a.rank === b.rank && a.left < b.left);

const utf8 = new TextEncoder();

/**
 * Appends the tokens of one pre-token `word` to `out`. `word` is already in vocab spelling: GPT-2 byte
 * characters, or for SPM-style BPE (gemma4) raw text with spaces as U+2581.
 */
export function bpeEncodeWord(vocab: Vocab, word: string, out: number[]): void {
  const pre = vocab.pre!;
  // llama3-style vocabularies take a whole pre-token that is itself a token, whatever the merges say.
  const whole = vocab.id(word);
  if (whole !== NO_TOKEN && (pre.ignoreMerges || (pre.id === 'gemma4' && /^\n+$/.test(word)))) {
    out.push(whole);
    return;
  }

  const sym = bpeMerge(vocab.mergeRanks, Array.from(word));
  for (const piece of sym) {
    const id = vocab.id(piece);
    if (id !== NO_TOKEN) {
      out.push(id);
      continue;
    }
    // A merge result missing from the vocab: fall back to its single characters (bytes), skipping any
    // the vocab lacks, as llama.cpp does.
    if (pre.byteLevel) {
      for (const ch of piece) {
        const c = vocab.id(ch);
        if (c !== NO_TOKEN) out.push(c);
      }
    } else {
      for (const byte of utf8.encode(piece)) {
        const c = vocab.id(byteTokenText(byte));
        if (c !== NO_TOKEN) out.push(c);
      }
    }
  }
}

/**
 * The BPE merge loop: from `symbols` (one character each), apply the lowest-ranked merge present
 * (`ranks` keyed "left right") until none applies; returns the surviving pieces in order.
 */
export function bpeMerge(ranks: ReadonlyMap<string, number>, symbols: string[]): string[] {
  const sym = symbols;
  const count = sym.length;
  const prev = Array.from({ length: count }, (_, i) => i - 1);
  const next = Array.from({ length: count }, (_, i) => (i + 1 < count ? i + 1 : -1));
  const queue = new Heap<Bigram>(before);
  const tryAdd = (left: number, right: number) => {
    if (left < 0 || right < 0) return;
    const rank = ranks.get(`${sym[left]} ${sym[right]}`);
    if (rank === undefined) return;
    queue.push({ left, right, rank, text: sym[left]! + sym[right]! });
  };
  for (let i = 1; i < count; i++) tryAdd(i - 1, i);

  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    const l = b.left;
    const r = b.right;
    if (sym[l] === '' || sym[r] === '' || sym[l]! + sym[r]! !== b.text) continue;
    sym[l] = b.text;
    sym[r] = '';
    next[l] = next[r]!;
    if (next[r]! >= 0) prev[next[r]!] = l;
    tryAdd(prev[l]!, l);
    tryAdd(l, next[l]!);
  }
  const pieces: string[] = [];
  for (let i = 0; i !== -1 && count > 0; i = next[i]!) pieces.push(sym[i]!);
  return pieces;
}
