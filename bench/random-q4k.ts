// Random q4_K weight blocks of a chosen spread, for synthetic models (src/formats has no q4_K encoder).
// x = d * sc * q - dmin * m with sc, m uniform 6-bit and q uniform 4-bit: dmin = 7.5 d makes the mean
// E[sc q] d - E[m] dmin zero (236.25 d - 31.5 dmin), and then E[x^2] = 66727 d^2, so d = std / 258.3.
import { putF16 } from '../src/formats/bytes.js';
import { Q4_K_BYTES, QK_K } from '../src/gguf/kquants.js';
import type { Prng } from '../src/numeric/prng.js';

const RMS_PER_D = Math.sqrt(66727);

/** [rows, cols] of random q4_K blocks (cols a multiple of 256) whose values have RMS about `std`. */
export function randomQ4K(rows: number, cols: number, rng: Prng, std: number): Uint8Array {
  const bytes = randomBytes((cols / QK_K) * Q4_K_BYTES * rows, rng);
  const d = std / RMS_PER_D;
  for (let b = 0; b < bytes.length; b += Q4_K_BYTES) {
    putF16(bytes, b, d);
    putF16(bytes, b + 2, 7.5 * d);
  }
  return bytes;
}

/** n random bytes, four per draw: one Prng call per byte would dominate the time for 8B-shaped tensors. */
export function randomBytes(n: number, rng: Prng): Uint8Array {
  const bytes = new Uint8Array(n);
  const words = new Uint32Array(bytes.buffer, 0, n >>> 2);
  for (let i = 0; i < words.length; i++) words[i] = rng.next() * 4294967296;
  for (let i = words.length << 2; i < n; i++) bytes[i] = rng.next() * 256;
  return bytes;
}
