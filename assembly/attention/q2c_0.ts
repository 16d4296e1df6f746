// q2c_0 (seed 000's per-channel 2-bit K: per channel, 32 tokens = f16 d + 8 bytes of 2-bit codes; token j
// in byte j>>2 at bits 2*(j&3)). A group of 32 tokens x D channels is stored channel by channel; kernels
// decode a whole group into a [32, D] f32 tile (channels become lanes) and run the shared f32 kernels.
// `table` (built by JS from the reference decoder): 256 entries x f32x4, the levels of a code byte's 4 tokens.
import { axpyRows, floatToHalf, halfToFloat, madd } from '../shared/common';

const QK = 32;
const BB: usize = 10;

/** Group at `grp` ([D blocks]) -> tile [32, D] f32: x = level[code] * d (the reference's float32 product). */
@inline function decodeGroup(grp: usize, D: i32, tile: usize, table: usize): void {
  const rowB = <usize>D << 2;
  for (let c = 0; c < D; c += 4) {
    const p0 = grp + <usize>c * BB;
    const p1 = p0 + BB;
    const p2 = p1 + BB;
    const p3 = p2 + BB;
    const d0 = f32x4.splat(halfToFloat(load<u16>(p0)));
    const d1 = f32x4.splat(halfToFloat(load<u16>(p1)));
    const d2 = f32x4.splat(halfToFloat(load<u16>(p2)));
    const d3 = f32x4.splat(halfToFloat(load<u16>(p3)));
    for (let j: usize = 0; j < 8; j++) {
      // v_i: tokens 4j..4j+3 of channel c+i; a 4x4 transpose makes one vector per token.
      const v0 = f32x4.mul(v128.load(table + (<usize>load<u8>(p0 + 2 + j) << 4)), d0);
      const v1 = f32x4.mul(v128.load(table + (<usize>load<u8>(p1 + 2 + j) << 4)), d1);
      const v2 = f32x4.mul(v128.load(table + (<usize>load<u8>(p2 + 2 + j) << 4)), d2);
      const v3 = f32x4.mul(v128.load(table + (<usize>load<u8>(p3 + 2 + j) << 4)), d3);
      const t0 = f32x4.shuffle(v0, v1, 0, 4, 1, 5);
      const t1 = f32x4.shuffle(v0, v1, 2, 6, 3, 7);
      const t2 = f32x4.shuffle(v2, v3, 0, 4, 1, 5);
      const t3 = f32x4.shuffle(v2, v3, 2, 6, 3, 7);
      const o = tile + (j << 2) * rowB + (<usize>c << 2);
      v128.store(o, f32x4.shuffle(t0, t2, 0, 1, 4, 5));
      v128.store(o + rowB, f32x4.shuffle(t0, t2, 2, 3, 6, 7));
      v128.store(o + 2 * rowB, f32x4.shuffle(t1, t3, 0, 1, 4, 5));
      v128.store(o + 3 * rowB, f32x4.shuffle(t1, t3, 2, 3, 6, 7));
    }
  }
}

/** Four f16 scales (bits in i32 lanes) -> f32x4, each exactly halfToFloat's (the same integer rebias and selects). */
@inline function halves(h: v128): v128 {
  const m = v128.and(h, i32x4.splat(0x7fff));
  const sub = f32x4.mul(f32x4.convert_i32x4_s(m), f32x4.splat(reinterpret<f32>(0x33800000)));
  const mag = v128.bitselect(i32x4.add(i32x4.shl(m, 13), i32x4.splat(0x38000000)), sub, i32x4.ge_s(m, i32x4.splat(0x400)));
  const special = i32x4.eq(v128.and(h, i32x4.splat(0x7c00)), i32x4.splat(0x7c00));
  const bits = v128.bitselect(v128.or(i32x4.splat(0x7f800000), i32x4.shl(v128.and(h, i32x4.splat(0x3ff)), 13)), mag, special);
  return v128.or(bits, i32x4.shl(v128.and(h, i32x4.splat(0x8000)), 16));
}

/** Run tokens [t0, t0+T) of one head (groups from `base`) -> dst [T, D] f32. */
export function q2c_0_decode(base: usize, t0: i32, T: i32, D: i32, dst: usize, tile: usize, table: usize): void {
  const rowB = <usize>D << 2;
  let t = t0;
  const end = t0 + T;
  while (t < end) {
    const g = t / QK;
    const a = t - g * QK;
    const n = min(QK - a, end - t);
    decodeGroup(base + <usize>g * D * BB, D, tile, table);
    memory.copy(dst + <usize>(t - t0) * rowB, tile + <usize>a * rowB, <usize>n * rowB);
    t += n;
  }
}

/** Stores lanes of v for tokens [4j, 4j+4) of a group that fall in [a, e), at o (token 4j). */
@inline function storeTokens(o: usize, v: v128, j: i32, a: i32, e: i32): void {
  const t = j << 2;
  if (t >= a && t + 4 <= e) { v128.store(o, v); return; }
  if (t >= a && t < e) store<f32>(o, f32x4.extract_lane(v, 0));
  if (t + 1 >= a && t + 1 < e) store<f32>(o, f32x4.extract_lane(v, 1), 4);
  if (t + 2 >= a && t + 2 < e) store<f32>(o, f32x4.extract_lane(v, 2), 8);
  if (t + 3 >= a && t + 3 < e) store<f32>(o, f32x4.extract_lane(v, 3), 12);
}

/**
 * Scores with the channel scales folded into q once per 32-token group (q'[c, r] = q[r, c] * d_c in the
 * tile), so the inner loop is a level-table load and a multiply-add, tokens in lanes: no decoded K at all.
 * Rows (query heads) go in fours, the 1-3 left over in one more pass (see groupRows).
 */
export function q2c_0_scores(q: usize, G: i32, D: i32, base: usize, t0: i32, T: i32, out: usize, outStride: i32, tile: usize, table: usize): void {
  const rowB = <usize>D << 2;
  const cs = <usize>G << 2;
  const cEnd = <usize>D * cs;
  const os = <usize>outStride << 2;
  const end = t0 + T;
  for (let g = t0 / QK; g * QK < end; g++) {
    const grp = base + <usize>g * D * BB;
    const a = max(t0, g * QK) - g * QK;
    const e = min(end, g * QK + QK) - g * QK;
    // q'[c, r] = q[r, c] * d_c for this group's channel scales, channel-major: a pass's rows of one channel
    // sit side by side (constant offsets from one address in the inner loop).
    for (let c = 0; c < D; c += 4) {
      const p = grp + <usize>c * BB;
      const d4 = halves(i32x4(load<u16>(p), load<u16>(p + BB), load<u16>(p + 2 * BB), load<u16>(p + 3 * BB)));
      for (let r = 0; r < G; r++) {
        const x = f32x4.mul(v128.load(q + <usize>r * rowB + (<usize>c << 2)), d4);
        const o = tile + ((<usize>c * G + r) << 2);
        store<f32>(o, f32x4.extract_lane(x, 0));
        store<f32>(o + cs, f32x4.extract_lane(x, 1));
        store<f32>(o + 2 * cs, f32x4.extract_lane(x, 2));
        store<f32>(o + 3 * cs, f32x4.extract_lane(x, 3));
      }
    }
    // out column of group token j: out + (g*32 + j - t0)*4.
    const o0 = out + ((<usize>(g * QK - t0)) << 2);
    const G4 = G & ~3;
    const rest = G - G4;
    for (let r = 0; r < G4; r += 4) groupRows(4, tile + (<usize>r << 2), cs, cEnd, grp, a, e, o0 + <usize>r * os, os, table);
    const qr = tile + (<usize>G4 << 2);
    const or = o0 + <usize>G4 * os;
    if (rest == 3) groupRows(3, qr, cs, cEnd, grp, a, e, or, os, table);
    else if (rest == 2) groupRows(2, qr, cs, cEnd, grp, a, e, or, os, table);
    else if (rest == 1) groupRows(1, qr, cs, cEnd, grp, a, e, or, os, table);
  }
}

/**
 * One step of W (1..3) code bytes (4W tokens, column j on) for R (1..4) rows of folded q' at q0 (channel c's rows
 * at q0 + c*cs, 4 bytes apart, cEnd = D*cs): each q' splat feeds W level vectors. R and W are constants after
 * inlining, so the unused accumulators fold away. Per token and row the channel order is the same whatever W.
 */
@inline function step(R: i32, W: i32, j: i32, q0: usize, cs: usize, cEnd: usize, grp: usize, a: i32, e: i32, o0: usize, os: usize, table: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  let b0 = f32x4.splat(0);
  let b1 = f32x4.splat(0);
  let b2 = f32x4.splat(0);
  let b3 = f32x4.splat(0);
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  let p = grp + 2 + <usize>j;
  for (let c: usize = 0; c < cEnd; c += cs) {
    const l0 = v128.load(table + (<usize>load<u8>(p) << 4));
    const l1 = W > 1 ? v128.load(table + (<usize>load<u8>(p, 1) << 4)) : l0;
    const l2 = W > 2 ? v128.load(table + (<usize>load<u8>(p, 2) << 4)) : l0;
    const x0 = v128.load32_splat(q0 + c);
    a0 = madd(x0, l0, a0);
    if (W > 1) b0 = madd(x0, l1, b0);
    if (W > 2) c0 = madd(x0, l2, c0);
    if (R > 1) {
      const x1 = v128.load32_splat(q0 + c, 4);
      a1 = madd(x1, l0, a1);
      if (W > 1) b1 = madd(x1, l1, b1);
      if (W > 2) c1 = madd(x1, l2, c1);
    }
    if (R > 2) {
      const x2 = v128.load32_splat(q0 + c, 8);
      a2 = madd(x2, l0, a2);
      if (W > 1) b2 = madd(x2, l1, b2);
      if (W > 2) c2 = madd(x2, l2, c2);
    }
    if (R > 3) {
      const x3 = v128.load32_splat(q0 + c, 12);
      a3 = madd(x3, l0, a3);
      if (W > 1) b3 = madd(x3, l1, b3);
      if (W > 2) c3 = madd(x3, l2, c3);
    }
    p += BB;
  }
  const o = o0 + (<usize>j << 4);
  storeTokens(o, a0, j, a, e);
  if (W > 1) storeTokens(o + 16, b0, j + 1, a, e);
  if (W > 2) storeTokens(o + 32, c0, j + 2, a, e);
  if (R > 1) {
    storeTokens(o + os, a1, j, a, e);
    if (W > 1) storeTokens(o + os + 16, b1, j + 1, a, e);
    if (W > 2) storeTokens(o + os + 32, c1, j + 2, a, e);
  }
  if (R > 2) {
    storeTokens(o + 2 * os, a2, j, a, e);
    if (W > 1) storeTokens(o + 2 * os + 16, b2, j + 1, a, e);
    if (W > 2) storeTokens(o + 2 * os + 32, c2, j + 2, a, e);
  }
  if (R > 3) {
    storeTokens(o + 3 * os, a3, j, a, e);
    if (W > 1) storeTokens(o + 3 * os + 16, b3, j + 1, a, e);
    if (W > 2) storeTokens(o + 3 * os + 32, c3, j + 2, a, e);
  }
}

/**
 * Tokens [a, e) of one group for R (1..4) rows: twelve tokens (three code bytes) a step at up to three rows,
 * nine accumulators in flight (six left the multiply-add latency uncovered; twelve at four rows would not fit
 * V8's 16 vector registers), eight at four rows; a last column or two takes the narrower steps.
 */
@inline function groupRows(R: i32, q0: usize, cs: usize, cEnd: usize, grp: usize, a: i32, e: i32, o0: usize, os: usize, table: usize): void {
  const jEnd = (e + 3) >> 2;
  let j = a >> 2;
  if (R < 4) for (; j + 2 < jEnd; j += 3) step(R, 3, j, q0, cs, cEnd, grp, a, e, o0, os, table);
  for (; j + 1 < jEnd; j += 2) step(R, 2, j, q0, cs, cEnd, grp, a, e, o0, os, table);
  if (j < jEnd) step(R, 1, j, q0, cs, cEnd, grp, a, e, o0, os, table);
}

export function q2c_0_accum(w: usize, wStride: i32, G: i32, D: i32, base: usize, t0: i32, T: i32, acc: usize, tile: usize, table: usize): void {
  const rowB = <usize>D << 2;
  let t = t0;
  const end = t0 + T;
  while (t < end) {
    const g = t / QK;
    const a = t - g * QK;
    const n = min(QK - a, end - t);
    decodeGroup(base + <usize>g * D * BB, D, tile, table);
    axpyRows(w + (<usize>(t - t0) << 2), wStride, G, D, tile + <usize>a * rowB, n, rowB, acc);
    t += n;
  }
}

/**
 * One group: 32 source rows (row t at src + t*srcStride floats) -> D blocks at dst. Same arithmetic as the
 * reference: sum of squares in float64 in token order, sqrt(ss/32) rounded to f32 then to f16 (Inf
 * saturates to 65504); t = float32(tHi * d); x < -t -> 0, x < 0 -> 1, x < t -> 2, else 3.
 */
export function q2c_0_encode(src: usize, srcStride: i32, T: i32, D: i32, dst: usize, tHi: f32): void {
  for (let c = 0; c < D; c++) {
    let ss: f64 = 0;
    for (let t = 0; t < QK; t++) {
      const x = <f64>load<f32>(src + ((<usize>t * srcStride + c) << 2));
      ss += x * x;
    }
    let h = floatToHalf(<f32>Math.sqrt(ss / 32));
    if ((h & 0x7fff) == 0x7c00) h = (h & 0x8000) | 0x7bff;
    const o = dst + <usize>c * BB;
    store<u16>(o, <u16>h);
    const thr: f32 = tHi * halfToFloat(h);
    for (let j = 0; j < 8; j++) {
      let byte: u32 = 0;
      for (let i = 0; i < 4; i++) {
        const x = load<f32>(src + ((<usize>(4 * j + i) * srcStride + c) << 2));
        const code: u32 = x < 0 ? (x < -thr ? 0 : 1) : x < thr ? 2 : 3;
        byte |= code << (2 * i);
      }
      store<u8>(o + 2 + j, <u8>byte);
    }
  }
}
