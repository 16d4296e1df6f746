// GPT-2's reversible byte <-> printable character map: byte-level BPE vocabularies spell every byte as
// one visible code point, so merges never see raw control bytes or spaces (space is 'Ġ', U+0120).

/** BYTE_TO_CHAR[b] is the one-code-point string standing for byte b. */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const out = new Array<string>(256);
  // Printable Latin-1 bytes stand for themselves.
  const keeps = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    out[b] = String.fromCodePoint(keeps(b) ? b : 256 + shifted++);
  }
  return out;
})();

/** Inverse of BYTE_TO_CHAR. */
export const CHAR_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]));

const encoder = new TextEncoder();

/** The byte-level spelling of `text`: its UTF-8 bytes, each mapped to one code point. */
export function byteEncode(text: string): string {
  let out = '';
  for (const b of encoder.encode(text)) out += BYTE_TO_CHAR[b]!;
  return out;
}
