// ggml's K-quant weight blocks (super-blocks of QK_K = 256 values), decoded bit-exactly like
// dequantize_row_q4_K / _q5_K / _q6_K: every product and difference rounded to float32 as C does.
// Golden vectors from the real ggml: test/golden/kquants/*.json (tools/golden/kquants_golden.c).
import { getF16 } from '../formats/bytes.js';

export const QK_K = 256;
const fr = Math.fround;

/**
 * block_q4_K, 144 B = 8 sub-blocks of 32 values, x = d * sc_j * q - dmin * m_j:
 *   [0..2)    d      f16 super-scale of the 6-bit sub-block scales
 *   [2..4)    dmin   f16 super-scale of the 6-bit sub-block mins
 *   [4..16)   scales 8 scales + 8 mins, 6 bits each (packing in scaleMin below)
 *   [16..144) qs     4-bit quants: for each 64 values, 32 bytes; low nibbles = first 32, high = next 32
 */
export const Q4_K_BYTES = 144;

/**
 * block_q5_K, 176 B: as q4_K plus a fifth bit per value.
 *   [0..2) d, [2..4) dmin, [4..16) scales (as q4_K)
 *   [16..48)  qh  high bits: value l of 64-value chunk c uses bit 2c (first 32) or 2c+1 (next 32) of qh[l]
 *   [48..176) qs  low 4 bits, nibble layout as q4_K
 */
export const Q5_K_BYTES = 176;

/**
 * block_q6_K, 210 B = 16 sub-blocks of 16 values, x = d * scales[j] * (q - 32), q 6-bit:
 *   [0..128)   ql      low 4 bits; per 128 values, 64 bytes: bytes 0-31 low/high nibble = values 0-31 / 64-95,
 *                      bytes 32-63 low/high nibble = values 32-63 / 96-127
 *   [128..192) qh      high 2 bits; per 128 values, 32 bytes: bits 0-1, 2-3, 4-5, 6-7 of qh[l] = values l, l+32, l+64, l+96
 *   [192..208) scales  int8 sub-block scales
 *   [208..210) d       f16 super-scale
 */
export const Q6_K_BYTES = 210;

/**
 * Sub-block j's 6-bit scale and min from the 12-byte q4_K/q5_K field (ggml's get_scale_min_k4):
 * j < 4 keep both in the low 6 bits of bytes j and j+4; j >= 4 split into a nibble of byte j+4
 * and the top 2 bits of bytes j-4 (scale) and j (min).
 */
function scaleMin(src: Uint8Array, at: number, j: number, out: Int32Array): void {
  if (j < 4) {
    out[0] = src[at + j]! & 63;
    out[1] = src[at + j + 4]! & 63;
  } else {
    out[0] = (src[at + j + 4]! & 0xf) | ((src[at + j - 4]! >> 6) << 4);
    out[1] = (src[at + j + 4]! >> 4) | ((src[at + j]! >> 6) << 4);
  }
}

const sm = new Int32Array(2);

/** One q4_K block at src[srcOff..] into dst[dstOff .. dstOff + 256]. */
export function decodeQ4K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number): void {
  const d = getF16(src, srcOff);
  const dmin = getF16(src, srcOff + 2);
  const scales = srcOff + 4;
  let q = srcOff + 16;
  let y = dstOff;
  for (let j = 0; j < 8; j += 2) {
    scaleMin(src, scales, j, sm);
    const d1 = fr(d * sm[0]!);
    const m1 = fr(dmin * sm[1]!);
    scaleMin(src, scales, j + 1, sm);
    const d2 = fr(d * sm[0]!);
    const m2 = fr(dmin * sm[1]!);
    for (let l = 0; l < 32; l++) dst[y + l] = fr(fr(d1 * (src[q + l]! & 0xf)) - m1);
    for (let l = 0; l < 32; l++) dst[y + 32 + l] = fr(fr(d2 * (src[q + l]! >> 4)) - m2);
    q += 32;
    y += 64;
  }
}

/** One q5_K block at src[srcOff..] into dst[dstOff .. dstOff + 256]. */
export function decodeQ5K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number): void {
  const d = getF16(src, srcOff);
  const dmin = getF16(src, srcOff + 2);
  const scales = srcOff + 4;
  const qh = srcOff + 16;
  let ql = srcOff + 48;
  let y = dstOff;
  let u1 = 1;
  let u2 = 2;
  for (let j = 0; j < 8; j += 2) {
    scaleMin(src, scales, j, sm);
    const d1 = fr(d * sm[0]!);
    const m1 = fr(dmin * sm[1]!);
    scaleMin(src, scales, j + 1, sm);
    const d2 = fr(d * sm[0]!);
    const m2 = fr(dmin * sm[1]!);
    for (let l = 0; l < 32; l++) dst[y + l] = fr(fr(d1 * ((src[ql + l]! & 0xf) + (src[qh + l]! & u1 ? 16 : 0))) - m1);
    for (let l = 0; l < 32; l++) dst[y + 32 + l] = fr(fr(d2 * ((src[ql + l]! >> 4) + (src[qh + l]! & u2 ? 16 : 0))) - m2);
    ql += 32;
    y += 64;
    u1 <<= 2;
    u2 <<= 2;
  }
}

/** One q6_K block at src[srcOff..] into dst[dstOff .. dstOff + 256]. */
export function decodeQ6K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number): void {
  const d = getF16(src, srcOff + 208);
  let ql = srcOff;
  let qh = srcOff + 128;
  let sc = srcOff + 192;
  let y = dstOff;
  for (let n = 0; n < QK_K; n += 128) {
    for (let l = 0; l < 32; l++) {
      const is = l >> 4;
      const h = src[qh + l]!;
      const q1 = ((src[ql + l]! & 0xf) | ((h & 3) << 4)) - 32;
      const q2 = ((src[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4)) - 32;
      const q3 = ((src[ql + l]! >> 4) | (((h >> 4) & 3) << 4)) - 32;
      const q4 = ((src[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4)) - 32;
      // scales are int8: (x << 24) >> 24 sign-extends the byte.
      dst[y + l] = fr(fr(d * ((src[sc + is]! << 24) >> 24)) * q1);
      dst[y + l + 32] = fr(fr(d * ((src[sc + is + 2]! << 24) >> 24)) * q2);
      dst[y + l + 64] = fr(fr(d * ((src[sc + is + 4]! << 24) >> 24)) * q3);
      dst[y + l + 96] = fr(fr(d * ((src[sc + is + 6]! << 24) >> 24)) * q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}
