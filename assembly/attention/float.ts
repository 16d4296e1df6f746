// Exact formats: f32, f16, bf16. Encode (bit-exact to src/formats), scores and weighted sums for G heads.
import { dotRows, axpyRows, halfToFloat4 } from '../shared/common';
import { tileTokens } from './tile';
import { halfBits4 } from '../shared/half_bits';

// ---- f32: rows are already f32, kernels read the packed bytes in place.

export function f32_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  const rb = <usize>D << 2;
  for (let t = 0; t < T; t++) memory.copy(dst + <usize>t * rb, src + ((<usize>t * srcStride) << 2), rb);
}

export function f32_decode(src: usize, T: i32, D: i32, dst: usize): void {
  memory.copy(dst, src, (<usize>T * D) << 2);
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
  // D % 16 == 0 (wasm-ops checks it): 8 values per step.
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const d = dst + ((<usize>t * D) << 1);
    for (let c = 0; c < D; c += 8) {
      const p = s + (<usize>c << 2);
      v128.store(d + (<usize>c << 1), i16x8.narrow_i32x4_u(halfBits4(v128.load(p)), halfBits4(v128.load(p, 16))));
    }
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

/** Four f32 lanes -> bf16 bits in i32 lanes, as numeric/half.ts fp32ToBf16: nearest even, NaN -> quiet NaN keeping the sign. */
@inline function bf16Bits4(x: v128): v128 {
  const hi = i32x4.shr_u(x, 16);
  const rounded = i32x4.shr_u(i32x4.add(x, i32x4.add(i32x4.splat(0x7fff), v128.and(hi, i32x4.splat(1)))), 16);
  const nan = i32x4.gt_s(v128.and(x, i32x4.splat(0x7fffffff)), i32x4.splat(0x7f800000));
  return v128.bitselect(v128.or(hi, i32x4.splat(64)), rounded, nan);
}

export function bf16_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize): void {
  for (let t = 0; t < T; t++) {
    const s = src + ((<usize>t * srcStride) << 2);
    const d = dst + ((<usize>t * D) << 1);
    for (let c = 0; c < D; c += 8) {
      const p = s + (<usize>c << 2);
      v128.store(d + (<usize>c << 1), i16x8.narrow_i32x4_u(bf16Bits4(v128.load(p)), bf16Bits4(v128.load(p, 16))));
    }
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
