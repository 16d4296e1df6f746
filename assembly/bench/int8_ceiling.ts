// The ceiling of an int8 matrix-matrix kernel in 128-bit relaxed SIMD on the running engine (bench/prefill-ceiling.ts):
// the relaxed prefill tile's register tile (4 weight rows x 8 tokens, i16x8.relaxed_dot_i8x16_i7x16_s on a 4-byte
// weight splat) over L1-resident operands, without the weight decode, the activation packing or the memory traffic.
// Built by the bench alone (not part of the kernel module). Each kernel returns a checksum so nothing is dropped.

/** Variant 0: the dots and i16 adds only (sums wrap; the timing is what counts). */
@inline function dots(B: usize, X: usize, cols: i32, widen: bool, float: bool, real: bool = false, S: usize = 0): v128 {
  const x2 = X + (<usize>cols << 2);
  const bRow = <usize>cols;
  let f0 = f32x4.splat(0), f1 = f32x4.splat(0), f2 = f32x4.splat(0), f3 = f32x4.splat(0);
  let h0 = f32x4.splat(0), h1 = f32x4.splat(0), h2 = f32x4.splat(0), h3 = f32x4.splat(0);
  let I0 = i32x4.splat(0), I1 = i32x4.splat(0), I2 = i32x4.splat(0), I3 = i32x4.splat(0);
  let J0 = i32x4.splat(0), J1 = i32x4.splat(0), J2 = i32x4.splat(0), J3 = i32x4.splat(0);
  let a0 = i16x8.splat(0), a1 = i16x8.splat(0), a2 = i16x8.splat(0), a3 = i16x8.splat(0);
  let b0 = i16x8.splat(0), b1 = i16x8.splat(0), b2 = i16x8.splat(0), b3 = i16x8.splat(0);
  const d = f32x4.splat(0.5);
  for (let c0: usize = 0; c0 < <usize>cols; c0 += 32) {
    if (widen) {
      a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = i16x8.splat(0);
    }
    for (let c = c0; c < c0 + 32; c += 4) {
      const xv = v128.load(X + (c << 2));
      const xw = v128.load(x2 + (c << 2));
      const w0 = v128.load32_splat(B + c);
      const w1 = v128.load32_splat(B + bRow + c);
      const w2 = v128.load32_splat(B + 2 * bRow + c);
      const w3 = v128.load32_splat(B + 3 * bRow + c);
      a0 = i16x8.add(a0, i16x8.relaxed_dot_i8x16_i7x16_s(xv, w0));
      a1 = i16x8.add(a1, i16x8.relaxed_dot_i8x16_i7x16_s(xv, w1));
      a2 = i16x8.add(a2, i16x8.relaxed_dot_i8x16_i7x16_s(xv, w2));
      a3 = i16x8.add(a3, i16x8.relaxed_dot_i8x16_i7x16_s(xv, w3));
      b0 = i16x8.add(b0, i16x8.relaxed_dot_i8x16_i7x16_s(xw, w0));
      b1 = i16x8.add(b1, i16x8.relaxed_dot_i8x16_i7x16_s(xw, w1));
      b2 = i16x8.add(b2, i16x8.relaxed_dot_i8x16_i7x16_s(xw, w2));
      b3 = i16x8.add(b3, i16x8.relaxed_dot_i8x16_i7x16_s(xw, w3));
    }
    if (widen) {
      // Per 32-value block: the i16 sums widened to i32 (the least an exact kernel needs).
      const e0 = i32x4.extadd_pairwise_i16x8_s(a0), e1 = i32x4.extadd_pairwise_i16x8_s(a1);
      const e2 = i32x4.extadd_pairwise_i16x8_s(a2), e3 = i32x4.extadd_pairwise_i16x8_s(a3);
      const g0 = i32x4.extadd_pairwise_i16x8_s(b0), g1 = i32x4.extadd_pairwise_i16x8_s(b1);
      const g2 = i32x4.extadd_pairwise_i16x8_s(b2), g3 = i32x4.extadd_pairwise_i16x8_s(b3);
      if (real) {
        // relaxed_tile.ts's q4_0 step as it is: per token quad its scales dA and sums (two loads, shifted: 8 sum x),
        // per row its scale splat; per lane f += f32(I - 8 sum x) * (s * dA).
        const g = c0 >> 4;
        const dA = v128.load(S + (g << 4));
        const OA = i32x4.shl(i32x4.add(v128.load(S + 4096 + (g << 4)), v128.load(S + 4096 + (g << 4), 16)), 3);
        const dB = v128.load(S + 8192 + (g << 4));
        const OB = i32x4.shl(i32x4.add(v128.load(S + 12288 + (g << 4)), v128.load(S + 12288 + (g << 4), 16)), 3);
        const s0 = v128.load32_splat(S + 16384 + (g << 2));
        const s1 = v128.load32_splat(S + 16384 + 1024 + (g << 2));
        const s2 = v128.load32_splat(S + 16384 + 2048 + (g << 2));
        const s3 = v128.load32_splat(S + 16384 + 3072 + (g << 2));
        f0 = f32x4.add(f0, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(e0, OA)), f32x4.mul(s0, dA)));
        f1 = f32x4.add(f1, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(e1, OA)), f32x4.mul(s1, dA)));
        f2 = f32x4.add(f2, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(e2, OA)), f32x4.mul(s2, dA)));
        f3 = f32x4.add(f3, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(e3, OA)), f32x4.mul(s3, dA)));
        h0 = f32x4.add(h0, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(g0, OB)), f32x4.mul(s0, dB)));
        h1 = f32x4.add(h1, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(g1, OB)), f32x4.mul(s1, dB)));
        h2 = f32x4.add(h2, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(g2, OB)), f32x4.mul(s2, dB)));
        h3 = f32x4.add(h3, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(g3, OB)), f32x4.mul(s3, dB)));
      } else if (float) {
        // And q4_0 / q8_0's float step: each block's integer dot times its scale, added to a float sum.
        f0 = f32x4.add(f0, f32x4.mul(f32x4.convert_i32x4_s(e0), d));
        f1 = f32x4.add(f1, f32x4.mul(f32x4.convert_i32x4_s(e1), d));
        f2 = f32x4.add(f2, f32x4.mul(f32x4.convert_i32x4_s(e2), d));
        f3 = f32x4.add(f3, f32x4.mul(f32x4.convert_i32x4_s(e3), d));
        h0 = f32x4.add(h0, f32x4.mul(f32x4.convert_i32x4_s(g0), d));
        h1 = f32x4.add(h1, f32x4.mul(f32x4.convert_i32x4_s(g1), d));
        h2 = f32x4.add(h2, f32x4.mul(f32x4.convert_i32x4_s(g2), d));
        h3 = f32x4.add(h3, f32x4.mul(f32x4.convert_i32x4_s(g3), d));
      } else {
        I0 = i32x4.add(I0, e0);
        I1 = i32x4.add(I1, e1);
        I2 = i32x4.add(I2, e2);
        I3 = i32x4.add(I3, e3);
        J0 = i32x4.add(J0, g0);
        J1 = i32x4.add(J1, g1);
        J2 = i32x4.add(J2, g2);
        J3 = i32x4.add(J3, g3);
      }
    }
  }
  if (!widen) {
    I0 = i32x4.extadd_pairwise_i16x8_s(i16x8.add(i16x8.add(a0, a1), i16x8.add(a2, a3)));
    J0 = i32x4.extadd_pairwise_i16x8_s(i16x8.add(i16x8.add(b0, b1), i16x8.add(b2, b3)));
  }
  const fi = f32x4.add(f32x4.add(f32x4.add(f0, f1), f32x4.add(f2, f3)), f32x4.add(f32x4.add(h0, h1), f32x4.add(h2, h3)));
  const ii = i32x4.add(i32x4.add(i32x4.add(I0, I1), i32x4.add(I2, I3)), i32x4.add(i32x4.add(J0, J1), i32x4.add(J2, J3)));
  return i32x4.add(ii, i32x4.trunc_sat_f32x4_s(fi));
}

/**
 * `reps` passes of one register tile over `cols` columns: weights B [4][cols] u8 (values 0..15), activations X
 * [pairs][2 quads][cols / 4][4 tokens][4] i8. variant 0: dots only; 1: + a widening per 32 values; 2: + q4_0's float step; 3: that step as
 * relaxed_tile.ts has it (per-block scale and sum loads from S [20 KiB], the offset subtracted, s * dA per lane).
 * Multiply-adds: reps * 4 * 8 * cols.
 */
export function tileLoop(variant: i32, B: usize, X: usize, cols: i32, reps: i32, pairs: i32, S: usize): i32 {
  let s = i32x4.splat(0);
  for (let r = 0; r < reps; r++) {
    // pass r reads token-quad pair r % pairs: pairs > 1 streams X from farther away (as 8 * pairs tokens would)
    const x = X + <usize>(r % pairs) * (<usize>cols << 3);
    if (variant == 0) s = i32x4.add(s, dots(B, x, cols, false, false));
    else if (variant == 1) s = i32x4.add(s, dots(B, x, cols, true, false));
    else if (variant == 2) s = i32x4.add(s, dots(B, x, cols, true, true));
    else s = i32x4.add(s, dots(B, x, cols, true, true, true, S));
  }
  return i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3);
}
