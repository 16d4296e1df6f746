// Encoding with Hugging Face tokenizers' rules (tokenizer.json): added tokens are split off first (raw
// ones in the raw text, normalized ones in the normalized text, leftmost-longest), the normalizer runs on
// each stretch between raw added tokens, then the pre-tokenizer and BPE over the declared merges.
import { byteEncode } from './byte-unicode.js';
import { bpeMerge } from './bpe.js';
import { normalizerOf, type AddedTokenFlags, type HfPipeline } from './hf-pipeline.js';
import { preTokens } from './pretokenize.js';
import { byteTokenText } from './spm.js';
import { NO_TOKEN, type Vocab } from './vocab.js';

/** A piece of input: text still to tokenize, or an added token already matched. */
type Piece = string | { id: number; flags: AddedTokenFlags };

const WORD_CHAR = /[\p{L}\p{N}_]/u;
const utf8 = new TextEncoder();

function* mapIter<T, U>(xs: Iterable<T>, f: (x: T) => U): Generator<U> {
  for (const x of xs) yield f(x);
}

/** Leftmost-longest matching of a fixed set of strings (HF's added-token splitter). */
class Splitter {
  private readonly byFirst = new Map<string, { text: string; id: number; flags: AddedTokenFlags }[]>();

  constructor(entries: { text: string; id: number; flags: AddedTokenFlags }[]) {
    for (const e of entries) {
      if (e.text.length === 0) continue;
      const list = this.byFirst.get(e.text[0]!) ?? [];
      list.push(e);
      this.byFirst.set(e.text[0]!, list);
    }
    for (const list of this.byFirst.values()) list.sort((a, b) => b.text.length - a.text.length);
  }

  get empty(): boolean {
    return this.byFirst.size === 0;
  }

  split(text: string): Piece[] {
    const out: Piece[] = [];
    let from = 0;
    for (let i = 0; i < text.length; ) {
      const m = this.byFirst.get(text[i]!)?.find((e) => text.startsWith(e.text, i) && wordOk(text, i, e));
      if (!m) {
        i++;
        continue;
      }
      if (i > from) out.push(text.slice(from, i));
      out.push({ id: m.id, flags: m.flags });
      i += m.text.length;
      from = i;
    }
    if (from < text.length) out.push(text.slice(from));
    stripAround(out);
    return out;
  }
}

// single_word: no word character may touch the match on either side.
function wordOk(text: string, at: number, e: { text: string; flags: AddedTokenFlags }): boolean {
  if (!e.flags.singleWord) return true;
  const before = at > 0 ? String.fromCodePoint(text.codePointAt(at - 1)!) : '';
  const after = text.slice(at + e.text.length, at + e.text.length + 1);
  return !(before && WORD_CHAR.test(before)) && !(after && WORD_CHAR.test(after));
}

// lstrip / rstrip: whitespace next to the token belongs to it.
function stripAround(pieces: Piece[]): void {
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    if (typeof p === 'string') continue;
    if (p.flags.lstrip && typeof pieces[i - 1] === 'string') pieces[i - 1] = (pieces[i - 1] as string).trimEnd();
    if (p.flags.rstrip && typeof pieces[i + 1] === 'string') pieces[i + 1] = (pieces[i + 1] as string).trimStart();
  }
}

/** The per-vocab state of HF encoding, built once. */
export class HfEncoder {
  private readonly normalize: (text: string) => string;
  private readonly raw: Splitter[];
  private readonly normalized: Splitter[];

  constructor(
    private readonly vocab: Vocab,
    private readonly hf: HfPipeline,
  ) {
    this.normalize = normalizerOf(hf.normalizer);
    // [0]: without special tokens, [1]: with them (parseSpecial).
    const build = (wantNormalized: boolean, special: boolean) =>
      new Splitter(
        hf.addedTokens
          .filter((t) => t.normalized === wantNormalized && (special || !t.special) && t.id < vocab.tokens.length)
          .map((t) => {
            const content = vocab.tokens[t.id]!;
            return { text: wantNormalized ? this.normalize(content) : content, id: t.id, flags: t };
          }),
      );
    this.raw = [build(false, false), build(false, true)];
    this.normalized = [build(true, false), build(true, true)];
  }

  /** Appends the ids of `text` (no BOS/EOS) to `out`, yielding after each pre-token (Tokenizer.encodeSteps). */
  *encodeSteps(text: string, parseSpecial: boolean, out: number[]): Generator<void> {
    const k = parseSpecial ? 1 : 0;
    const sections = text.length > 0 ? this.raw[k]!.split(text) : [];
    for (const [index, section] of sections.entries()) {
      if (typeof section !== 'string') {
        out.push(section.id);
        continue;
      }
      if (section.length === 0) continue;
      const norm = this.normalize(section);
      if (norm.length === 0) continue;
      for (const sub of this.normalized[k]!.split(norm)) {
        if (typeof sub !== 'string') out.push(sub.id);
        else if (sub.length > 0) yield* this.encodeWords(this.preTokenize(sub, index), out);
      }
    }
  }

  private preTokenize(text: string, sectionIndex: number): Iterable<string> {
    const v = this.vocab;
    if (v.pre !== null) {
      // Byte-level BPE: the named pre-tokenizer's regexes, then the GPT-2 byte spelling.
      const t = this.hf.addPrefixSpace && !text.startsWith(' ') ? ' ' + text : text;
      return mapIter(preTokens(t, v.pre.patterns), byteEncode);
    }
    const ms = this.hf.metaspace;
    if (ms === null) return [text];
    let t = text.replaceAll(' ', ms.replacement);
    const prefix = ms.prepend === 'always' || (ms.prepend === 'first' && sectionIndex === 0);
    if (prefix && !t.startsWith(ms.replacement)) t = ms.replacement + t;
    if (!ms.split) return [t];
    return t.split(new RegExp(`(?=${ms.replacement.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')})`, 'u')).filter((w) => w);
  }

  private *encodeWords(words: Iterable<string>, out: number[]): Generator<void> {
    const v = this.vocab;
    let lastUnk = false;
    const push = (id: number) => {
      const isUnk = id === v.unk && id !== NO_TOKEN;
      if (!(isUnk && lastUnk && this.hf.fuseUnk)) out.push(id);
      lastUnk = isUnk;
    };
    for (const word of words) {
      const whole = v.id(word);
      if (this.hf.ignoreMerges && whole !== NO_TOKEN) {
        push(whole);
        continue;
      }
      for (const piece of bpeMerge(v.mergeRanks, Array.from(word))) {
        const id = v.id(piece);
        if (id !== NO_TOKEN) {
          push(id);
          continue;
        }
        const bytes = this.hf.byteFallback ? Array.from(utf8.encode(piece), (b) => v.id(byteTokenText(b))) : [];
        if (bytes.length > 0 && bytes.every((b) => b !== NO_TOKEN)) bytes.forEach(push);
        else if (v.unk !== NO_TOKEN) push(v.unk);
      }
      yield;
    }
  }
}
