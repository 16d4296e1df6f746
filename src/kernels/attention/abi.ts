// Calling conventions of the wasm kernels (a table row names one) and the shapes each one serves. Plain
// functions of the format and sizes, so the main thread and the pool workers decide alike.
import type { KvFormat } from '../../formats/format.js';
import { MAX_WASM_HEAD_DIM, TILE_BYTES } from '../runtime/wasm.js';

/**
 * Argument lists (pointers are arena byte addresses; `tile` is the caller's scratch tile, `table` the row's
 * lookup table or 0, `param` the row's constant):
 * - encode:         (src, srcStride, T, D, dst)
 * - encode-channel: (src, srcStride, T, D, dst, param)     T = blockValues, one group
 * - decode:         (src, T, D, dst)
 * - decode-channel: (base, t0, T, D, dst, tile, table)
 * - scores:         (q, G, D, k, T, out, outStride, tile)
 * - scores-int:     (qi, qd, G, D, k, T, out, outStride)   q as int16 per 32 values + f32 block scales
 * - scores-channel: (q, G, D, base, t0, T, out, outStride, tile, table)
 * - accum:          (w, wStride, G, D, v, T, acc, tile)
 * - accum-channel:  (w, wStride, G, D, base, t0, T, acc, tile, table)
 * Token-axis kernels take the address of their first row; channel-axis ones walk groups from `base`.
 */
export type Abi = 'encode' | 'encode-channel' | 'decode' | 'decode-channel' | 'scores' | 'scores-int' | 'scores-channel' | 'accum' | 'accum-channel';

/**
 * True when a kernel of this ABI serves format f at head dim D with `rows` query rows per call. Every
 * kernel takes D in multiples of 16 up to MAX_WASM_HEAD_DIM; token-axis rows must be whole blocks;
 * integer dots take q in blocks of 32; a channel group's [blockValues, D] f32 tile must fit the tile, and
 * channel scores fold the scales into q there too (rows x D f32).
 */
export function abiFits(abi: Abi, f: KvFormat, D: number, rows = 1): boolean {
  if (!(D > 0 && D % 16 === 0 && D <= MAX_WASM_HEAD_DIM)) return false;
  switch (abi) {
    case 'encode':
    case 'decode':
    case 'scores':
    case 'accum':
      return D % f.blockValues === 0;
    case 'scores-int':
      return D % f.blockValues === 0 && D % 32 === 0;
    case 'encode-channel':
    case 'decode-channel':
    case 'accum-channel':
      return f.blockValues * D * 4 <= TILE_BYTES;
    case 'scores-channel':
      return f.blockValues * D * 4 <= TILE_BYTES && rows * D * 4 <= TILE_BYTES;
  }
}
