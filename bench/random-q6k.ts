// Random q6_K weight blocks of a chosen spread, for synthetic models (src/formats has no q6_K encoder).
// x = d * sc * (q - 32) with sc uniform int8 and q uniform 6-bit: E[sc^2] = 5461.5, E[(q - 32)^2] = 341.5,
// so E[x^2] = 1865102 d^2 and d = std / 1365.7.
import { putF16 } from '../src/formats/bytes.js';
import { Q6_K_BYTES, QK_K } from '../src/gguf/kquants.js';
import type { Prng } from '../src/numeric/prng.js';
import { randomBytes } from './random-q4k.js';

const RMS_PER_D = Math.sqrt(5461.5 * 341.5);
/** Where a block's f16 d lies (after ql[128], qh[64], scales[16]). */
const D_AT = 208;

/** [rows, cols] of random q6_K blocks (cols a multiple of 256) whose values have RMS about `std`. */
export function randomQ6K(rows: number, cols: number, rng: Prng, std: number): Uint8Array {
  const bytes = randomBytes((cols / QK_K) * Q6_K_BYTES * rows, rng);
  const d = std / RMS_PER_D;
  for (let b = 0; b < bytes.length; b += Q6_K_BYTES) putF16(bytes, b + D_AT, d);
  return bytes;
}
