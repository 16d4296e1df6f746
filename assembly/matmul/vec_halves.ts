// One-token (decode) matmul for f16 and bf16 weights: y[r] = W[r, :] . x in f32, four rows at once (one per
// lane, each x load serving the four), 8 halves per 16-byte load split into its even and odd 16-bit lanes by
// shifts (x comes permuted to match, packActHalves). bf16 is its f32 high half; the f16 conversion is exact and never touches an f32
// subnormal: the x 2^112 trick (decode.ts halfToFloat4s) multiplies subnormal halves as f32
// subnormals, which this CPU kind takes a microcode assist for; real f16 weights (~0.25% subnormal at
// sigma 0.02) then ran at half speed (4.9 vs 11.5 GB/s, 2048x768, one core).
import { halfToFloat, hsum4, magToFloat } from '../shared/common';
import { keep, touch } from './touch';

/** The even (low) halves of v's 32-bit lanes as f32x4 (f16: finite halves exact; Inf/NaN are loaded as f32 weights). */
@inline export function evenHalves(bf: bool, v: v128): v128 {
  if (bf) return i32x4.shl(v, 16);
  return v128.or(magToFloat(v128.and(i32x4.shl(v, 13), i32x4.splat(0x0fffe000))), v128.and(i32x4.shl(v, 16), i32x4.splat(0x80000000)));
}

/** The odd (high) halves of v's 32-bit lanes as f32x4. */
@inline export function oddHalves(bf: bool, v: v128): v128 {
  if (bf) return v128.and(v, i32x4.splat(0xffff0000));
  return v128.or(magToFloat(v128.and(i32x4.shr_u(v, 3), i32x4.splat(0x0fffe000))), v128.and(v, i32x4.splat(0x80000000)));
}

/** x [cols] f32 -> xe [cols] f32: per 8 values the 4 even ones, then the 4 odd ones; a last partial 8 as is. */
export function packActHalves(x: usize, cols: i32, xe: usize): void {
  const c8 = <usize>(cols & ~7) << 2;
  let i: usize = 0;
  for (; i < c8; i += 32) {
    const a = v128.load(x + i), b = v128.load(x + i, 16);
    v128.store(xe + i, f32x4.shuffle(a, b, 0, 2, 4, 6));
    v128.store(xe + i, f32x4.shuffle(a, b, 1, 3, 5, 7), 16);
  }
  for (; i < (<usize>cols << 2); i += 4) store<f32>(xe + i, load<f32>(x + i));
}

/** sum over the last cols % 8 values of row h (natural order in xe). */
@inline function tail(bf: bool, h: usize, c8: usize, cols: usize, xe: usize): f32 {
  let s: f32 = 0;
  for (let c = c8; c < cols; c++) {
    const b = <u32>load<u16>(h + (c << 1));
    s += (bf ? reinterpret<f32>(b << 16) : halfToFloat(b)) * load<f32>(xe + (c << 2));
  }
  return s;
}

/** y[r] = W[r] . x for `rows` f16 (bf false) or bf16 rows at w (rowBytes apart), x packed by packActHalves. */
@inline export function matmulVecHalves(bf: bool, w: usize, rowBytes: i32, rows: i32, cols: i32, xe: usize, y: usize): void {
  const rb = <usize>rowBytes;
  const c8 = <usize>(cols & ~7);
  const end = xe + (c8 << 2);
  const last = w + <usize>rows * rb - 1;
  let r = 0;
  for (; r + 4 <= rows; r += 4) {
    let p0 = w + <usize>r * rb;
    let p1 = p0 + rb, p2 = p1 + rb, p3 = p2 + rb;
    let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
    // bf16: the row group two ahead, touched at the pace this one is read (touch.ts), 64 bytes a step:
    // 230 -> 200 us cold on [2048, 768]. Not f16: there they take 1.8-2.5x the time (in-process A/B; unexplained).
    let t = p0 + (rb << 3);
    let sink: u32 = 0;
    for (let x = xe; x < end; x += 32) {
      if (bf) {
        sink += touch(t, last);
        t += 64;
      }
      const xv = v128.load(x), xo = v128.load(x, 16);
      const v0 = v128.load(p0), v1 = v128.load(p1), v2 = v128.load(p2), v3 = v128.load(p3);
      a0 = f32x4.add(a0, f32x4.add(f32x4.mul(evenHalves(bf, v0), xv), f32x4.mul(oddHalves(bf, v0), xo)));
      a1 = f32x4.add(a1, f32x4.add(f32x4.mul(evenHalves(bf, v1), xv), f32x4.mul(oddHalves(bf, v1), xo)));
      a2 = f32x4.add(a2, f32x4.add(f32x4.mul(evenHalves(bf, v2), xv), f32x4.mul(oddHalves(bf, v2), xo)));
      a3 = f32x4.add(a3, f32x4.add(f32x4.mul(evenHalves(bf, v3), xv), f32x4.mul(oddHalves(bf, v3), xo)));
      p0 += 16; p1 += 16; p2 += 16; p3 += 16;
    }
    keep(sink);
    let s = hsum4(a0, a1, a2, a3);
    if (c8 < <usize>cols) {
      const q = w + <usize>r * rb;
      s = f32x4.add(s, f32x4(tail(bf, q, c8, cols, xe), tail(bf, q + rb, c8, cols, xe), tail(bf, q + 2 * rb, c8, cols, xe), tail(bf, q + 3 * rb, c8, cols, xe)));
    }
    v128.store(y + (<usize>r << 2), s);
  }
  for (; r < rows; r++) {
    let p = w + <usize>r * rb;
    let a = f32x4.splat(0);
    for (let x = xe; x < end; x += 32) {
      const v = v128.load(p);
      a = f32x4.add(a, f32x4.add(f32x4.mul(evenHalves(bf, v), v128.load(x)), f32x4.mul(oddHalves(bf, v), v128.load(x, 16))));
      p += 16;
    }
    // As a lane of the four-row path (and tile_f32.ts): the tail added only when there is one.
    const s = f32x4.extract_lane(hsum4(a, a, a, a), 0);
    store<f32>(y + (<usize>r << 2), c8 < <usize>cols ? s + tail(bf, w + <usize>r * rb, c8, cols, xe) : s);
  }
}
