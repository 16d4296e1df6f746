// Kernels for token-axis formats without a fused path: decode a tile of rows to f32 in L1 (the format's exact
// dequantizer), then the shared G-head dots / weighted sums. Dispatch is on a constant kind at each export
// (inlined; no function table, so the module keeps no static data in the shared memory).
import { dotRows, axpyRows } from '../shared/common';
import { tileTokens } from './tile';
import { q4_1Blocks, q5_0Blocks, q5_1Blocks, iq4_nlBlocks } from './ggml4';
import { nf4Blocks, int4Blocks, int2Blocks, signBlocks } from './codebook';

const K_Q4_1: i32 = 0; // 32 values, 20 bytes
const K_Q5_0: i32 = 1; // 32 values, 22 bytes
const K_Q5_1: i32 = 2; // 32 values, 24 bytes
const K_IQ4_NL: i32 = 3; // 32 values, 18 bytes
const K_NF4: i32 = 4; // 64 values, 34 bytes
const K_INT4_G32: i32 = 5; // 32 values, 20 bytes
const K_INT4_G64: i32 = 6; // 64 values, 36 bytes
const K_INT4_G128: i32 = 7; // 128 values, 68 bytes
const K_INT2_G32: i32 = 8; // 32 values, 12 bytes
const K_INT2_G64: i32 = 9; // 64 values, 20 bytes
const K_INT2_G128: i32 = 10; // 128 values, 36 bytes
const K_SIGN_G32: i32 = 11; // 32 values, 6 bytes
const K_SIGN_G8: i32 = 12; // 32 values, 12 bytes
const K_SIGN_G4: i32 = 13; // 32 values, 20 bytes

@inline function blockValues(kind: i32): i32 {
  if (kind == K_Q4_1) return 32; if (kind == K_Q5_0) return 32; if (kind == K_Q5_1) return 32; if (kind == K_IQ4_NL) return 32; if (kind == K_NF4) return 64; if (kind == K_INT4_G32) return 32; if (kind == K_INT4_G64) return 64; if (kind == K_INT4_G128) return 128; if (kind == K_INT2_G32) return 32; if (kind == K_INT2_G64) return 64; if (kind == K_INT2_G128) return 128;
  if (kind >= K_SIGN_G32) return 32;
  return 0;
}

@inline function blockBytes(kind: i32): usize {
  if (kind == K_Q4_1) return 20; if (kind == K_Q5_0) return 22; if (kind == K_Q5_1) return 24; if (kind == K_IQ4_NL) return 18; if (kind == K_NF4) return 34; if (kind == K_INT4_G32) return 20; if (kind == K_INT4_G64) return 36; if (kind == K_INT4_G128) return 68; if (kind == K_INT2_G32) return 12; if (kind == K_INT2_G64) return 20; if (kind == K_INT2_G128) return 36;
  if (kind == K_SIGN_G32) return 6; if (kind == K_SIGN_G8) return 12; if (kind == K_SIGN_G4) return 20;
  return 0;
}

@inline function decodeBlocks(kind: i32, src: usize, nb: i32, dst: usize): void {
  if (kind == K_Q4_1) { q4_1Blocks(src, nb, dst); return; }
  if (kind == K_Q5_0) { q5_0Blocks(src, nb, dst); return; }
  if (kind == K_Q5_1) { q5_1Blocks(src, nb, dst); return; }
  if (kind == K_IQ4_NL) { iq4_nlBlocks(src, nb, dst); return; }
  if (kind == K_NF4) { nf4Blocks(src, nb, dst); return; }
  if (kind == K_INT4_G32) { int4Blocks(src, nb, dst, 32); return; }
  if (kind == K_INT4_G64) { int4Blocks(src, nb, dst, 64); return; }
  if (kind == K_INT4_G128) { int4Blocks(src, nb, dst, 128); return; }
  if (kind == K_INT2_G32) { int2Blocks(src, nb, dst, 32); return; }
  if (kind == K_INT2_G64) { int2Blocks(src, nb, dst, 64); return; }
  if (kind == K_INT2_G128) { int2Blocks(src, nb, dst, 128); return; }
  if (kind == K_SIGN_G32) { signBlocks(src, nb, dst, 32); return; }
  if (kind == K_SIGN_G8) { signBlocks(src, nb, dst, 8); return; }
  if (kind == K_SIGN_G4) { signBlocks(src, nb, dst, 4); return; }
}

@inline function decodeRows(kind: i32, src: usize, T: i32, D: i32, dst: usize): void {
  decodeBlocks(kind, src, T * (D / blockValues(kind)), dst);
}

@inline function tiledScores(kind: i32, q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void {
  const TT = tileTokens(D);
  const bpr = D / blockValues(kind);
  const rb = <usize>bpr * blockBytes(kind);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    decodeBlocks(kind, k + <usize>t0 * rb, n * bpr, tile);
    dotRows(q, G, D, tile, n, <usize>D << 2, out + (<usize>t0 << 2), outStride);
  }
}

@inline function tiledAccum(kind: i32, w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void {
  const TT = tileTokens(D);
  const bpr = D / blockValues(kind);
  const rb = <usize>bpr * blockBytes(kind);
  for (let t0 = 0; t0 < T; t0 += TT) {
    const n = min(TT, T - t0);
    decodeBlocks(kind, v + <usize>t0 * rb, n * bpr, tile);
    axpyRows(w + (<usize>t0 << 2), wStride, G, D, tile, n, <usize>D << 2, acc);
  }
}

export function q4_1_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_Q4_1, src, T, D, dst); }
export function q4_1_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_Q4_1, q, G, D, k, T, out, outStride, tile); }
export function q4_1_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_Q4_1, w, wStride, G, D, v, T, acc, tile); }

export function q5_0_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_Q5_0, src, T, D, dst); }
export function q5_0_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_Q5_0, q, G, D, k, T, out, outStride, tile); }
export function q5_0_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_Q5_0, w, wStride, G, D, v, T, acc, tile); }

export function q5_1_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_Q5_1, src, T, D, dst); }
export function q5_1_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_Q5_1, q, G, D, k, T, out, outStride, tile); }
export function q5_1_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_Q5_1, w, wStride, G, D, v, T, acc, tile); }

export function iq4_nl_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_IQ4_NL, src, T, D, dst); }
export function iq4_nl_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_IQ4_NL, q, G, D, k, T, out, outStride, tile); }
export function iq4_nl_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_IQ4_NL, w, wStride, G, D, v, T, acc, tile); }

export function nf4_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_NF4, src, T, D, dst); }
export function nf4_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_NF4, q, G, D, k, T, out, outStride, tile); }
export function nf4_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_NF4, w, wStride, G, D, v, T, acc, tile); }

export function int4_g32_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_INT4_G32, src, T, D, dst); }
export function int4_g32_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_INT4_G32, q, G, D, k, T, out, outStride, tile); }
export function int4_g32_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_INT4_G32, w, wStride, G, D, v, T, acc, tile); }

export function int4_g64_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_INT4_G64, src, T, D, dst); }
export function int4_g64_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_INT4_G64, q, G, D, k, T, out, outStride, tile); }
export function int4_g64_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_INT4_G64, w, wStride, G, D, v, T, acc, tile); }

export function int4_g128_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_INT4_G128, src, T, D, dst); }
export function int4_g128_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_INT4_G128, q, G, D, k, T, out, outStride, tile); }
export function int4_g128_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_INT4_G128, w, wStride, G, D, v, T, acc, tile); }

export function int2_g32_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_INT2_G32, src, T, D, dst); }
export function int2_g32_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_INT2_G32, q, G, D, k, T, out, outStride, tile); }
export function int2_g32_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_INT2_G32, w, wStride, G, D, v, T, acc, tile); }

export function int2_g64_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_INT2_G64, src, T, D, dst); }
export function int2_g64_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_INT2_G64, q, G, D, k, T, out, outStride, tile); }
export function int2_g64_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_INT2_G64, w, wStride, G, D, v, T, acc, tile); }

export function int2_g128_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_INT2_G128, src, T, D, dst); }
export function int2_g128_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_INT2_G128, q, G, D, k, T, out, outStride, tile); }
export function int2_g128_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_INT2_G128, w, wStride, G, D, v, T, acc, tile); }

export function sign_g32_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_SIGN_G32, src, T, D, dst); }
export function sign_g32_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_SIGN_G32, q, G, D, k, T, out, outStride, tile); }
export function sign_g32_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_SIGN_G32, w, wStride, G, D, v, T, acc, tile); }

export function sign_g8_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_SIGN_G8, src, T, D, dst); }
export function sign_g8_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_SIGN_G8, q, G, D, k, T, out, outStride, tile); }
export function sign_g8_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_SIGN_G8, w, wStride, G, D, v, T, acc, tile); }

export function sign_g4_decode(src: usize, T: i32, D: i32, dst: usize): void { decodeRows(K_SIGN_G4, src, T, D, dst); }
export function sign_g4_scores(q: usize, G: i32, D: i32, k: usize, T: i32, out: usize, outStride: i32, tile: usize): void { tiledScores(K_SIGN_G4, q, G, D, k, T, out, outStride, tile); }
export function sign_g4_accum(w: usize, wStride: i32, G: i32, D: i32, v: usize, T: i32, acc: usize, tile: usize): void { tiledAccum(K_SIGN_G4, w, wStride, G, D, v, T, acc, tile); }
