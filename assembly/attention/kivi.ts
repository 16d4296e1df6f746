// KIVI's per-channel affine K (int4c_g32 / int2c_g32): per channel, 32 tokens = f16 d, f16 m, codes low bits
// first (token t at bit t*bits). A group (32 tokens x D channels, channel by channel) is decoded into a
// [32, D] f32 tile (x = m + code * d, exact in f32 as in the reference), then the shared f32 kernels run.
import { dotRows, axpyRows, halfToFloat } from '../shared/common';

const QK = 32;

/** Codes of tokens 4j..4j+3 of the channel block at p, as i32 lanes (bits = 2 or 4). */
@inline function codes4(p: usize, j: i32, bits: i32): v128 {
  if (bits == 2) {
    // Byte j holds tokens 4j..4j+3 at bits 0, 2, 4, 6: shift lane k left by 6 - 2k, then take bits 6..7.
    const b = i32x4.splat(<i32>load<u8>(p + 4 + <usize>j));
    return v128.and(i32x4.shr_u(i32x4.mul(b, i32x4(64, 16, 4, 1)), 6), i32x4.splat(3));
  }
  const h = i32x4.splat(<i32>load<u16>(p + 4 + (<usize>j << 1)));
  return v128.and(i32x4.shr_u(i32x4.mul(h, i32x4(4096, 256, 16, 1)), 12), i32x4.splat(15));
}

/** Group at grp ([D blocks]) -> tile [32, D] f32, four channels at a time through a 4x4 transpose. */
@inline function decodeGroup(grp: usize, D: i32, tile: usize, bits: i32): void {
  const bb = <usize>(4 + ((QK * bits) >> 3));
  const rowB = <usize>D << 2;
  for (let c = 0; c < D; c += 4) {
    const p0 = grp + <usize>c * bb;
    const p1 = p0 + bb;
    const p2 = p1 + bb;
    const p3 = p2 + bb;
    const d0 = f32x4.splat(halfToFloat(load<u16>(p0)));
    const d1 = f32x4.splat(halfToFloat(load<u16>(p1)));
    const d2 = f32x4.splat(halfToFloat(load<u16>(p2)));
    const d3 = f32x4.splat(halfToFloat(load<u16>(p3)));
    const m0 = f32x4.splat(halfToFloat(load<u16>(p0, 2)));
    const m1 = f32x4.splat(halfToFloat(load<u16>(p1, 2)));
    const m2 = f32x4.splat(halfToFloat(load<u16>(p2, 2)));
    const m3 = f32x4.splat(halfToFloat(load<u16>(p3, 2)));
    for (let j = 0; j < 8; j++) {
      // v_i: tokens 4j..4j+3 of channel c+i; the transpose makes one vector per token.
      const v0 = f32x4.add(m0, f32x4.mul(f32x4.convert_i32x4_s(codes4(p0, j, bits)), d0));
      const v1 = f32x4.add(m1, f32x4.mul(f32x4.convert_i32x4_s(codes4(p1, j, bits)), d1));
      const v2 = f32x4.add(m2, f32x4.mul(f32x4.convert_i32x4_s(codes4(p2, j, bits)), d2));
      const v3 = f32x4.add(m3, f32x4.mul(f32x4.convert_i32x4_s(codes4(p3, j, bits)), d3));
      const t0 = f32x4.shuffle(v0, v1, 0, 4, 1, 5);
      const t1 = f32x4.shuffle(v0, v1, 2, 6, 3, 7);
      const t2 = f32x4.shuffle(v2, v3, 0, 4, 1, 5);
      const t3 = f32x4.shuffle(v2, v3, 2, 6, 3, 7);
      const o = tile + <usize>(j << 2) * rowB + (<usize>c << 2);
      v128.store(o, f32x4.shuffle(t0, t2, 0, 1, 4, 5));
      v128.store(o + rowB, f32x4.shuffle(t0, t2, 2, 3, 6, 7));
      v128.store(o + 2 * rowB, f32x4.shuffle(t1, t3, 0, 1, 4, 5));
      v128.store(o + 3 * rowB, f32x4.shuffle(t1, t3, 2, 3, 6, 7));
    }
  }
}

@inline function groupBytes(D: i32, bits: i32): usize {
  return <usize>D * (4 + ((QK * bits) >> 3));
}

/** Op 0 = decode into dst [T, D], 1 = scores, 2 = weighted sums; walks the groups of run tokens [t0, t0+T). */
@inline function walk(op: i32, bits: i32, x: usize, xStride: i32, G: i32, D: i32, base: usize, t0: i32, T: i32, y: usize, yStride: i32, tile: usize): void {
  const rowB = <usize>D << 2;
  let t = t0;
  const end = t0 + T;
  while (t < end) {
    const g = t / QK;
    const a = t - g * QK;
    const n = min(QK - a, end - t);
    decodeGroup(base + <usize>g * groupBytes(D, bits), D, tile, bits);
    if (op == 0) memory.copy(y + <usize>(t - t0) * rowB, tile + <usize>a * rowB, <usize>n * rowB);
    else if (op == 1) dotRows(x, G, D, tile + <usize>a * rowB, n, rowB, y + (<usize>(t - t0) << 2), yStride);
    else axpyRows(x + (<usize>(t - t0) << 2), xStride, G, D, tile + <usize>a * rowB, n, rowB, y);
    t += n;
  }
}

export function int4c_g32_decode(base: usize, t0: i32, T: i32, D: i32, dst: usize, tile: usize, table: usize): void { walk(0, 4, 0, 0, 0, D, base, t0, T, dst, 0, tile); }
export function int4c_g32_scores(q: usize, G: i32, D: i32, base: usize, t0: i32, T: i32, out: usize, outStride: i32, tile: usize, table: usize): void { walk(1, 4, q, 0, G, D, base, t0, T, out, outStride, tile); }
export function int4c_g32_accum(w: usize, wStride: i32, G: i32, D: i32, base: usize, t0: i32, T: i32, acc: usize, tile: usize, table: usize): void { walk(2, 4, w, wStride, G, D, base, t0, T, acc, 0, tile); }
export function int2c_g32_decode(base: usize, t0: i32, T: i32, D: i32, dst: usize, tile: usize, table: usize): void { walk(0, 2, 0, 0, 0, D, base, t0, T, dst, 0, tile); }
export function int2c_g32_scores(q: usize, G: i32, D: i32, base: usize, t0: i32, T: i32, out: usize, outStride: i32, tile: usize, table: usize): void { walk(1, 2, q, 0, G, D, base, t0, T, out, outStride, tile); }
export function int2c_g32_accum(w: usize, wStride: i32, G: i32, D: i32, base: usize, t0: i32, T: i32, acc: usize, tile: usize, table: usize): void { walk(2, 2, w, wStride, G, D, base, t0, T, acc, 0, tile); }
