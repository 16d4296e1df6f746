// k-bit codes (k = 1, 2 or 4) packed low bits first: element j sits in byte (j*k) >> 3 at bit (j*k) & 7.

/** Packs codes[0..n) (each < 2^k) into ceil(n*k/8) bytes at dst[off..]; n*k must be a multiple of 8. */
export function packCodes(codes: ArrayLike<number>, n: number, k: number, dst: Uint8Array, off: number): void {
  const perByte = 8 / k;
  for (let b = 0; b < (n * k) / 8; b++) {
    let byte = 0;
    for (let i = 0; i < perByte; i++) byte |= codes[b * perByte + i]! << (i * k);
    dst[off + b] = byte;
  }
}

/** Code of element j (k bits) from bytes packed by `packCodes`. */
export function codeAt(src: Uint8Array, off: number, j: number, k: number): number {
  const bit = j * k;
  return (src[off + (bit >> 3)]! >> (bit & 7)) & ((1 << k) - 1);
}
