// SentencePiece-style BPE ('llama' model): start from single code points, repeatedly merge the adjacent
// pair whose concatenation is the highest-scoring vocab token, then spell leftovers as <0xXX> byte tokens.
import { ArgumentError } from '../../errors.js';
import { Heap } from './heap.js';
import { NO_TOKEN, type Vocab } from './vocab.js';

interface Bigram {
  left: number;
  right: number;
  score: number;
  /** Length of left + right when queued; a later mismatch means one side has changed since. */
  size: number;
}

// Highest score first; equal scores merge leftmost first (sentencepiece's order).
const before = (a: Bigram, b: Bigram) => a.score > b.score || (a.score === b.score && a.left < b.left);

const utf8 = new TextEncoder();
const HEX = '0123456789ABCDEF';

/** SentencePiece's spelling of a raw byte token: "<0x0A>". */
export function byteTokenText(byte: number): string {
  return `<0x${HEX[byte >> 4]}${HEX[byte & 15]}>`;
}

/** Id for one raw byte: "<0xXX>", else the byte as a one-char token, else <unk>. */
export function byteToken(vocab: Vocab, byte: number): number {
  let id = vocab.id(byteTokenText(byte));
  if (id === NO_TOKEN && byte < 0x80) id = vocab.id(String.fromCharCode(byte));
  if (id === NO_TOKEN) id = vocab.unk;
  if (id === NO_TOKEN) throw new ArgumentError(`vocab has no token for byte 0x${byte.toString(16)} and no <unk>`);
  return id;
}

/** Appends the tokens of `text` (spaces already escaped to U+2581) to `out`. */
export function spmEncode(vocab: Vocab, text: string, out: number[]): void {
  // Symbols are code points as [start, end) into `text`, linked so merged-away ones drop out.
  const start: number[] = [];
  const len: number[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    const w = cp > 0xffff ? 2 : 1;
    start.push(i);
    len.push(w);
    i += w;
  }
  const count = start.length;
  if (count === 0) return;
  const prev = Array.from({ length: count }, (_, i) => i - 1);
  const next = Array.from({ length: count }, (_, i) => (i + 1 < count ? i + 1 : -1));

  const queue = new Heap<Bigram>(before);
  const tryAdd = (left: number, right: number) => {
    if (left < 0 || right < 0) return;
    const size = len[left]! + len[right]!;
    const id = vocab.id(text.slice(start[left]!, start[left]! + size));
    if (id === NO_TOKEN) return;
    queue.push({ left, right, score: vocab.scores[id]!, size });
  };
  for (let i = 1; i < count; i++) tryAdd(i - 1, i);

  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    const l = b.left;
    const r = b.right;
    if (len[l] === 0 || len[r] === 0 || len[l]! + len[r]! !== b.size) continue;
    len[l] = b.size;
    len[r] = 0;
    next[l] = next[r]!;
    if (next[r]! >= 0) prev[next[r]!] = l;
    tryAdd(prev[l]!, l);
    tryAdd(l, next[l]!);
  }

  for (let i = 0; i !== -1; i = next[i]!) {
    const piece = text.slice(start[i]!, start[i]! + len[i]!);
    const id = vocab.id(piece);
    if (id !== NO_TOKEN) {
      out.push(id);
      continue;
    }
    // Merges only ever build vocab tokens, so what is left is one code point missing from the vocab.
    for (const byte of utf8.encode(piece)) out.push(byteToken(vocab, byte));
  }
}
