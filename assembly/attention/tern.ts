// tern_g32/g8/g4 (src/formats/tern.ts): 32 ternary codes per block, 32/g f16 scales, then 7 bytes of base-3
// digits (byte i = sum t_(5i+k) 3^k). Decode a tile of rows to f32 (x = (code - 1) * s, the reference's
// product), then the shared G-head dots / weighted sums, as tiled.ts does for the other token formats.
import { dotRows, axpyRows, halfToFloat } from '../shared/common';
import { tileTokens } from './tile';

const QK = 32;

/** nb blocks -> nb * 32 f32. Digits come digit by digit (byte % 3, byte / 3), so bytes >= 243 decode as the reference. */
@inline function ternBlocks(src: usize, nb: i32, dst: usize, g: i32): void {
  const sets = QK / g;
  const bb = <usize>(2 * sets + 7);
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * bb;
    const o = dst + (<usize>ib << 7);
    const qt = p + (<usize>sets << 1);
    for (let i = 0; i < 7; i++) {
      let byte = <u32>load<u8>(qt + <usize>i);
      const n = i < 6 ? 5 : 2;
      for (let k = 0; k < n; k++) {
        const j = 5 * i + k;
        const s = halfToFloat(load<u16>(p + (<usize>(j / g) << 1)));
        // (code - 1) * s with s from the f16: 0 * s keeps -0 and NaN as the reference's float product.
        store<f32>(o + (<usize>j << 2), <f32>(<i32>(byte % 3) - 1) * s);
        byte /= 3;
      }
    }
  }
}

@inline function blockBytes(g: i32): usize {
  return <usize>(2 * (QK / g) + 7);
}

@inline function ternScores(g: i32, q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const TT = tileTokens(D);
  const bpr = D / QK;
  const rb = <usize>bpr * blockBytes(g);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    ternBlocks(k + <usize>t0 * rb, n * bpr, tile, g);
    dotRows(q, G, D, tile, n, <usize>D << 2, out + (<usize>t0 << 2), outStride);
  }
}

@inline function ternAccum(g: i32, w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const bpr = D / QK;
  const rb = <usize>bpr * blockBytes(g);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    ternBlocks(v + <usize>t0 * rb, n * bpr, tile, g);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}

export function tern_g32_decode(src: usize, T: i32, D: i32, dst: usize): void { ternBlocks(src, T * (D / QK), dst, 32); }
export function tern_g32_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { ternScores(32, q, G, D, k, T, out, outStride, tile); }
export function tern_g32_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { ternAccum(32, w, wStride, G, D, v, T, acc, tile); }
export function tern_g8_decode(src: usize, T: i32, D: i32, dst: usize): void { ternBlocks(src, T * (D / QK), dst, 8); }
export function tern_g8_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { ternScores(8, q, G, D, k, T, out, outStride, tile); }
export function tern_g8_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { ternAccum(8, w, wStride, G, D, v, T, acc, tile); }
export function tern_g4_decode(src: usize, T: i32, D: i32, dst: usize): void { ternBlocks(src, T * (D / QK), dst, 4); }
export function tern_g4_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { ternScores(4, q, G, D, k, T, out, outStride, tile); }
export function tern_g4_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { ternAccum(4, w, wStride, G, D, v, T, acc, tile); }
