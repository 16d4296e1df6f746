// The kernel and activation layout a matmul of n tokens runs for one weight, from the weight-type table.
import type { WasmKernels } from '../runtime/wasm.js';
import { matmulConfig, type Activations } from './config.js';
import { weightType, type MatmulKernel } from './table.js';
import type { PackedWeight } from './weights.js';

/**
 * Kept for bench labels (bench/engine.ts): from this many tokens the int8 (q8_0) and f16 calls leave the
 * one-token kernels for the tiled ones; every other size runs the tiles.
 */
export const TILE_MIN_TOKENS_Q8 = 4;
export const TILE_MIN_TOKENS_F32 = 2;

/**
 * Activation layouts a call may need; one weight group packs each at most once. vec*: one token in the order
 * a type's one-token kernel reads (assembly/matmul/vec.ts ORDER_*: int16 natural, q4_0 nibbles, q4_K nibbles; f32
 * for f16 / bf16, which the f32 tile reads too; int16 even/odd per 16 for q6_K; int8 natural for q4_0x4); tiles*: token quads for the
 * int8 tile, tiles32b / tiles256b the same int8 narrowed to bytes per 4 columns (the relaxed tile; the int16 quads follow
 * them in q as its staging); raw: x as it is (the f32 tile of f32 and quantized weights).
 */
export type Layout = 'raw' | 'tiles32' | 'tiles32b' | 'tiles256' | 'tiles256b' | 'vec0' | 'vec1' | 'vec2' | 'vec3' | 'vec4' | 'vec5';

export interface Plan {
  kernel: MatmulKernel;
  layout: Layout;
}

/**
 * The one-token layout order for this weight and these activations, or -1: the type has a one-token kernel
 * (vecOrder: int8 orders only with 'q8' activations; f16 computes in f32 either way), and for the 32-value
 * block types (whose kernels convert block scales four at a time, Inf/NaN not kept) every scale is finite. The
 * scale check runs once per weight; a weight with a non-finite scale runs the exact tiled kernel at every size.
 */
const vecChecked = new WeakMap<PackedWeight, number>();
function vecOrder(e: WasmKernels['exports'], w: PackedWeight, activations: Activations): number {
  const row = weightType(w.type)!;
  let order = vecChecked.get(w);
  if (order === undefined) {
    order = row.oneToken?.order ?? -1;
    if (order >= 0 && row.scalesChecked && e['vecScalesFinite']!(w.type, w.ptr, w.rows * w.rowBytes) !== 1) order = -1;
    vecChecked.set(w, order);
  }
  return order < 0 || (activations !== 'q8' && row.acts === 'q8') ? -1 : order;
}

/** Per module, per type: whether it is a relaxed build with relaxed tiles for the type (relaxedTileType). */
const relaxedTypes = new WeakMap<WasmKernels['exports'], Map<number, boolean>>();
function relaxedIn(e: WasmKernels['exports'], type: number): boolean {
  let m = relaxedTypes.get(e);
  if (!m) relaxedTypes.set(e, (m = new Map()));
  let r = m.get(type);
  if (r === undefined) m.set(type, (r = e['relaxedTileType']!(type) === 1));
  return r;
}

/** packActVec's order for f16 / bf16 (assembly/matmul/vec.ts ORDER_HALVES). */
const ORDER_HALVES = 3;

/**
 * The kernel and layout for n tokens. Every kernel of a type sums each output in the same order
 * (assembly/matmul_tile*.ts), so the choice by n changes speed, never bits.
 */
export function plan(e: WasmKernels['exports'], w: PackedWeight, n: number, activations: Activations): Plan {
  const row = weightType(w.type)!;
  const order = row.oneToken && n <= row.oneToken.maxTokens ? vecOrder(e, w, activations) : -1;
  if (order >= 0) return { kernel: 'matmulVec', layout: `vec${order as 0 | 1 | 2 | 3 | 4 | 5}` };
  // f16 / bf16: x in the one-token kernel's even/odd order, which the f32 tile's decoded rows follow.
  if (row.oneToken?.order === ORDER_HALVES) return { kernel: 'matmulF32Tiled', layout: 'vec3' };
  if (activations === 'q8' && row.acts === 'q8') {
    if (row.relaxedTile && matmulConfig().relaxed && relaxedIn(e, w.type))
      return { kernel: 'matmulQ8Relaxed', layout: row.actBlock === 256 ? 'tiles256b' : 'tiles32b' };
    return { kernel: 'matmulQ8Tiled', layout: row.actBlock === 256 ? 'tiles256' : 'tiles32' };
  }
  return { kernel: 'matmulF32Tiled', layout: 'raw' };
}

/** The kernel a call of n tokens runs for this weight (tests prove the fast paths ran). */
export function matmulKernelFor(w: PackedWeight, n: number, activations: Activations = matmulConfig().activations): MatmulKernel {
  return plan(w.space.exports, w, n, activations).kernel;
}

/** Arena addresses of one packed activation layout: q (int or f32 values), d (scales), s (sums). */
export interface Packed {
  q: number;
  d: number;
  s: number;
}

/** Bytes of [q, d, s] for a layout of n tokens x cols. */
export function layoutBytes(layout: Layout, n: number, cols: number): [number, number, number] {
  const ng = Math.ceil(cols / 16);
  const nq = Math.ceil(n / 4);
  switch (layout) {
    case 'raw':
      return [0, 0, 0];
    case 'tiles32':
    case 'tiles256':
      return [nq * cols * 8, nq * ng * 16, nq * ng * 16];
    case 'tiles32b':
    case 'tiles256b':
      return [nq * cols * 12, nq * ng * 16, nq * ng * 16];
    case 'vec0':
    case 'vec1':
    // vec2: relaxed builds use half of q (int8, table.ts oneToken.relaxed).
    case 'vec2':
      return [n * cols * 2, n * Math.ceil(cols / 32) * 4, n * Math.ceil(cols / 32) * 2];
    case 'vec3':
      return [n * cols * 4, 0, 0];
    // vec4: relaxed builds use half of q (int8, as vec2).
    case 'vec4':
      return [n * cols * 2, n * Math.ceil(cols / 256) * 4, n * Math.ceil(cols / 16) * 2];
    case 'vec5':
      return [n * cols, n * Math.ceil(cols / 32) * 4, n * Math.ceil(cols / 32) * 2];
  }
}
