// The forward pass's small ops over activations in arena memory: RMSNorm, RoPE, gated activations, residual
// and bias adds, soft-cap, scale. The TS reference (src/kernels/ops/reference.ts) defines them; parity in
// src/kernels/ops/ops.test.ts. Any length works (scalar tails); in-place where the reference is.
import { exp4, tanh4 } from './math';

/** Lanes 0-1 of a and lanes 0-1 of b as one f32x4 (joins two demoted f64x2 halves). */
@inline function join2(a: v128, b: v128): v128 {
  return i8x16.shuffle(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
}

/** f32 lanes 2-3 of v as f64x2. */
@inline function promoteHigh(v: v128): v128 {
  return f64x2.promote_low_f32x4(i8x16.shuffle(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
}

/**
 * out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w for n rows of dim values (out may alias x). Squares, their
 * sum (ggml's ggml_float) and the products run in f64 lanes, like the reference: the sum order is the only
 * difference.
 */
export function opRmsNorm(out: usize, x: usize, w: usize, n: i32, dim: i32, eps: f64): void {
  const d4 = <usize>(dim & ~3) << 2;
  const rb = <usize>dim << 2;
  for (let t = 0; t < n; t++) {
    const xr = x + <usize>t * rb;
    const orow = out + <usize>t * rb;
    let a0 = f64x2.splat(0);
    let a1 = f64x2.splat(0);
    let i: usize = 0;
    for (; i < d4; i += 16) {
      const v = v128.load(xr + i);
      const lo = f64x2.promote_low_f32x4(v);
      const hi = promoteHigh(v);
      a0 = f64x2.add(a0, f64x2.mul(lo, lo));
      a1 = f64x2.add(a1, f64x2.mul(hi, hi));
    }
    const a = f64x2.add(a0, a1);
    let ss = f64x2.extract_lane(a, 0) + f64x2.extract_lane(a, 1);
    for (; i < rb; i += 4) {
      const v = <f64>load<f32>(xr + i);
      ss += v * v;
    }
    const s = f64x2.splat(1.0 / Math.sqrt(ss / <f64>dim + eps));
    for (i = 0; i < d4; i += 16) {
      const v = v128.load(xr + i);
      const g = v128.load(w + i);
      const lo = f64x2.mul(f64x2.mul(f64x2.promote_low_f32x4(v), s), f64x2.promote_low_f32x4(g));
      const hi = f64x2.mul(f64x2.mul(promoteHigh(v), s), promoteHigh(g));
      v128.store(orow + i, join2(f32x4.demote_f64x2_zero(lo), f32x4.demote_f64x2_zero(hi)));
    }
    const sc = f64x2.extract_lane(s, 0);
    for (; i < rb; i += 4) store<f32>(orow + i, <f32>(<f64>load<f32>(xr + i) * sc * <f64>load<f32>(w + i)));
  }
}

/**
 * Rotates x [n, heads, headDim] in place over the first `dims` values of each head with tables cos, sin
 * [n, dims/2]: neox != 0 pairs (i, i + dims/2), else neighbours (2i, 2i+1). f32 arithmetic, like ggml.
 */
export function opRope(x: usize, n: i32, heads: i32, headDim: i32, dims: i32, neox: i32, cos: usize, sin: usize): void {
  const half = dims >> 1;
  const h4 = half & ~3;
  for (let t = 0; t < n; t++) {
    const ct = cos + ((<usize>t * half) << 2);
    const st = sin + ((<usize>t * half) << 2);
    for (let h = 0; h < heads; h++) {
      const o = x + ((<usize>(t * heads + h) * headDim) << 2);
      let i = 0;
      if (neox) {
        const b = o + (<usize>half << 2);
        for (; i < h4; i += 4) {
          const k = <usize>i << 2;
          const x0 = v128.load(o + k);
          const x1 = v128.load(b + k);
          const c = v128.load(ct + k);
          const s = v128.load(st + k);
          v128.store(o + k, f32x4.sub(f32x4.mul(x0, c), f32x4.mul(x1, s)));
          v128.store(b + k, f32x4.add(f32x4.mul(x0, s), f32x4.mul(x1, c)));
        }
      } else {
        // Four pairs per step: [x0 y0 x1 y1] * [c0 c0 c1 c1] + [y0 x0 y1 x1] * [-s0 s0 -s1 s1].
        const flip = f32x4(-1, 1, -1, 1);
        for (; i < h4; i += 4) {
          const k = <usize>i << 2;
          const p = o + (k << 1);
          const v0 = v128.load(p);
          const v1 = v128.load(p, 16);
          const c = v128.load(ct + k);
          const s = v128.load(st + k);
          const c0 = i32x4.shuffle(c, c, 0, 0, 1, 1);
          const c1 = i32x4.shuffle(c, c, 2, 2, 3, 3);
          const s0 = f32x4.mul(i32x4.shuffle(s, s, 0, 0, 1, 1), flip);
          const s1 = f32x4.mul(i32x4.shuffle(s, s, 2, 2, 3, 3), flip);
          v128.store(p, f32x4.add(f32x4.mul(v0, c0), f32x4.mul(i32x4.shuffle(v0, v0, 1, 0, 3, 2), s0)));
          v128.store(p, f32x4.add(f32x4.mul(v1, c1), f32x4.mul(i32x4.shuffle(v1, v1, 1, 0, 3, 2), s1)), 16);
        }
      }
      const stride: usize = neox ? <usize>half << 2 : 4;
      const step: usize = neox ? 4 : 8;
      for (; i < half; i++) {
        const a = o + <usize>i * step;
        const c = load<f32>(ct + (<usize>i << 2));
        const s = load<f32>(st + (<usize>i << 2));
        const x0 = load<f32>(a);
        const x1 = load<f32>(a + stride);
        store<f32>(a, x0 * c - x1 * s);
        store<f32>(a + stride, x0 * s + x1 * c);
      }
    }
  }
}

/** SiLU(g) * u = g / (1 + e^-g) * u. */
@inline function silu4(g: v128, u: v128): v128 {
  return f32x4.mul(f32x4.div(g, f32x4.add(f32x4.splat(1), exp4(f32x4.neg(g)))), u);
}

/** sqrt(2 / pi), GELU's tanh-approximation constant. */
const GELU_C: f32 = 0.7978845608028654;

/**
 * tanh-GELU(g) * u: 0.5 g (1 + tanh(z)) = g / (1 + e^(-2z)) with z = c (g + 0.044715 g^3), the same value
 * without the cancellation 1 + tanh(z) suffers for negative z.
 */
@inline function gelu4(g: v128, u: v128): v128 {
  const z = f32x4.mul(f32x4.splat(GELU_C), f32x4.add(g, f32x4.mul(f32x4.splat(0.044715), f32x4.mul(f32x4.mul(g, g), g))));
  return f32x4.mul(f32x4.div(g, f32x4.add(f32x4.splat(1), exp4(f32x4.mul(z, f32x4.splat(-2))))), u);
}

/** gate = SiLU(gate) * up over n values (SwiGLU). */
export function opSiluMul(gate: usize, up: usize, n: i32): void {
  const n4 = <usize>(n & ~3) << 2;
  const nb = <usize>n << 2;
  let i: usize = 0;
  for (; i < n4; i += 16) v128.store(gate + i, silu4(v128.load(gate + i), v128.load(up + i)));
  for (; i < nb; i += 4) store<f32>(gate + i, f32x4.extract_lane(silu4(f32x4.splat(load<f32>(gate + i)), f32x4.splat(load<f32>(up + i))), 0));
}

/** gate = GELU(gate) * up over n values (GeGLU, tanh approximation: ggml_gelu, gelu_pytorch_tanh). */
export function opGeluMul(gate: usize, up: usize, n: i32): void {
  const n4 = <usize>(n & ~3) << 2;
  const nb = <usize>n << 2;
  let i: usize = 0;
  for (; i < n4; i += 16) v128.store(gate + i, gelu4(v128.load(gate + i), v128.load(up + i)));
  for (; i < nb; i += 4) store<f32>(gate + i, f32x4.extract_lane(gelu4(f32x4.splat(load<f32>(gate + i)), f32x4.splat(load<f32>(up + i))), 0));
}

/** x += y over n values (the residual add). */
export function opAdd(x: usize, y: usize, n: i32): void {
  const n4 = <usize>(n & ~3) << 2;
  const nb = <usize>n << 2;
  let i: usize = 0;
  for (; i < n4; i += 16) v128.store(x + i, f32x4.add(v128.load(x + i), v128.load(y + i)));
  for (; i < nb; i += 4) store<f32>(x + i, load<f32>(x + i) + load<f32>(y + i));
}

/** x[t] += b for n rows of dim values (a bias). */
export function opAddRows(x: usize, b: usize, n: i32, dim: i32): void {
  const rb = <usize>dim << 2;
  for (let t = 0; t < n; t++) opAdd(x + <usize>t * rb, b, dim);
}

/** x = cap * tanh(x / cap) over n values. */
export function opSoftcap(x: usize, n: i32, cap: f32): void {
  const n4 = <usize>(n & ~3) << 2;
  const nb = <usize>n << 2;
  const c = f32x4.splat(cap);
  let i: usize = 0;
  for (; i < n4; i += 16) v128.store(x + i, f32x4.mul(tanh4(f32x4.div(v128.load(x + i), c)), c));
  for (; i < nb; i += 4) store<f32>(x + i, f32x4.extract_lane(f32x4.mul(tanh4(f32x4.splat(load<f32>(x + i) / cap)), c), 0));
}

/** x *= k over n values; the product in f64 with k unrounded, like the reference (exact same values). */
export function opScale(x: usize, n: i32, k: f64): void {
  const n4 = <usize>(n & ~3) << 2;
  const nb = <usize>n << 2;
  const kv = f64x2.splat(k);
  let i: usize = 0;
  for (; i < n4; i += 16) {
    const v = v128.load(x + i);
    v128.store(x + i, join2(f32x4.demote_f64x2_zero(f64x2.mul(f64x2.promote_low_f32x4(v), kv)), f32x4.demote_f64x2_zero(f64x2.mul(promoteHigh(v), kv))));
  }
  for (; i < nb; i += 4) store<f32>(x + i, <f32>(<f64>load<f32>(x + i) * k));
}

/** x = e^x over n values: exported for the accuracy test of exp4 (the activations' exponential). */
export function opExp(x: usize, n: i32): void {
  const n4 = <usize>(n & ~3) << 2;
  const nb = <usize>n << 2;
  let i: usize = 0;
  for (; i < n4; i += 16) v128.store(x + i, exp4(v128.load(x + i)));
  for (; i < nb; i += 4) store<f32>(x + i, f32x4.extract_lane(exp4(f32x4.splat(load<f32>(x + i))), 0));
}

/** Index of the first NaN or +-Inf among n values (exponent bits all ones), or -1: the forward's finiteness check. */
export function opFirstNonFinite(x: usize, n: i32): i32 {
  const mask = i32x4.splat(0x7f800000);
  let i = 0;
  // Whole vectors while all lanes are finite; the scalar loop pins the index.
  for (; i + 4 <= n; i += 4) {
    if (v128.any_true(i32x4.eq(v128.and(v128.load(x + (<usize>i << 2)), mask), mask))) break;
  }
  for (; i < n; i++) {
    if ((load<u32>(x + (<usize>i << 2)) & 0x7f800000) == 0x7f800000) return i;
  }
  return -1;
}
