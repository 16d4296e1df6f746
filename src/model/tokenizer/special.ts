// Splits raw text around special tokens written verbatim (e.g. "<|im_start|>"), as llama.cpp's
// tokenizer_st_partition: longest token text first, every occurrence, before any merging.
import { TokenType } from './metadata.js';
import type { Vocab } from './vocab.js';

/** A piece of input: raw text still to tokenize, or a token id already decided. */
export type Fragment = string | number;

/**
 * Control and unknown tokens are matched only when `parseSpecial` is set; user-defined tokens always are
 * (HF tokenizers treat added tokens that way).
 */
export function partitionSpecial(vocab: Vocab, text: string, parseSpecial: boolean): Fragment[] {
  let fragments: Fragment[] = text.length > 0 ? [text] : [];
  for (const id of vocab.specialTokens) {
    const type = vocab.types[id];
    if (!parseSpecial && (type === TokenType.control || type === TokenType.unknown)) continue;
    const needle = vocab.tokens[id]!;
    if (!fragments.some((f) => typeof f === 'string' && f.includes(needle))) continue;
    const next: Fragment[] = [];
    for (const f of fragments) {
      if (typeof f !== 'string') {
        next.push(f);
        continue;
      }
      let from = 0;
      for (let at = f.indexOf(needle); at >= 0; at = f.indexOf(needle, from)) {
        if (at > from) next.push(f.slice(from, at));
        next.push(id);
        from = at + needle.length;
      }
      if (from < f.length) next.push(f.slice(from));
    }
    fragments = next;
  }
  return fragments;
}
