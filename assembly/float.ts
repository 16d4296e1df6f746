// Exact formats: f32, f16, bf16. Encode (bit-exact to src/formats), scores and weighted sums for G heads.
import { dotRows, axpyRows, floatToHalf, halfToFloat4 } from './common';
import { tileTokens } from './tile';

// ---- f32: rows are already f32, kernels read the packed bytes in place.

export function f32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const rb = <usize>D << 2;
  for (let t = 0; t < T; t++) memory.copy(dst + <usize>t * rb, src + ((<usize>t * srcStride) << 2), rb);
}

export function f32_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  dotRows(q, G, D, k, T, <usize>D << 2, out, outStride);
}

export function f32_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const rb = <usize>D << 2;
  // Tiles of TT rows, each first touched line by line in address order: independent loads that pull the
  // tile in at full memory parallelism (axpyRows walks it column by column, a strided pattern the
  // prefetchers serve badly past L3); then every head reads it from L1.
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    const src = v + <usize>t0 * rb;
    const end = src + <usize>n * rb;
    let touch: i32 = 0;
    for (let p = src; p < end; p += 64) touch |= load<i32>(p);
    store<i32>(tile, touch);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, src, n, rb, acc);
  }
}

// ---- f16: 8 halves per 16-byte load, widened by bit math (Inf/NaN read as large finite values).

export function f16_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const d = dst + ((<usize>t * D) << 1);
    for (let c = 0; c < D; c++) store<u16>(d + (<usize>c << 1), <u16>floatToHalf(load<f32>(s + (<usize>c << 2))));
  }
}

@inline function f16Decode(src: usize, T: i32, D: i32, dst: usize): void {
  const n = <usize>T * D;
  for (let i: usize = 0; i < n; i += 8) {
    const h = v128.load(src + (i << 1));
    v128.store(dst + (i << 2), halfToFloat4(i32x4.extend_low_i16x8_u(h)));
    v128.store(dst + (i << 2), halfToFloat4(i32x4.extend_high_i16x8_u(h)), 16);
  }
}

export function f16_decode(src: usize, T: i32, D: i32, dst: usize): void {
  f16Decode(src, T, D, dst);
}

export function f16_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    f16Decode(k + ((<usize>t0 * D) << 1), n, D, tile);
    dotRows(q, G, D, tile, n, <usize>D << 2, out + (<usize>t0 << 2), outStride);
  }
}

export function f16_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    f16Decode(v + ((<usize>t0 * D) << 1), n, D, tile);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}

// ---- bf16: the top 16 bits of an f32.

/** Same rounding as numeric/half.ts fp32ToBf16: nearest even, NaN -> quiet NaN keeping the sign. */
@inline function floatToBf16(x: u32): u32 {
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 64) & 0xffff;
  return ((x + (0x7fff + ((x >>> 16) & 1))) >>> 16) & 0xffff;
}

export function bf16_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const d = dst + ((<usize>t * D) << 1);
    for (let c = 0; c < D; c++) store<u16>(d + (<usize>c << 1), <u16>floatToBf16(load<u32>(s + (<usize>c << 2))));
  }
}

@inline function bf16Decode(src: usize, T: i32, D: i32, dst: usize): void {
  const n = <usize>T * D;
  for (let i: usize = 0; i < n; i += 8) {
    const h = v128.load(src + (i << 1));
    v128.store(dst + (i << 2), i32x4.shl(i32x4.extend_low_i16x8_u(h), 16));
    v128.store(dst + (i << 2), i32x4.shl(i32x4.extend_high_i16x8_u(h), 16), 16);
  }
}

export function bf16_decode(src: usize, T: i32, D: i32, dst: usize): void {
  bf16Decode(src, T, D, dst);
}

export function bf16_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    bf16Decode(k + ((<usize>t0 * D) << 1), n, D, tile);
    dotRows(q, G, D, tile, n, <usize>D << 2, out + (<usize>t0 << 2), outStride);
  }
}

export function bf16_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    bf16Decode(v + ((<usize>t0 * D) << 1), n, D, tile);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}
