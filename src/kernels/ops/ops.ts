// The forward pass's small ops on the wasm kernels (assembly/ops/ops.ts) when every array is a view of arena
// memory (its byteOffset is its address: no copy), else on the TS reference (reference.ts). Same
// signatures and contracts as the reference; parity and tolerances in ops.test.ts.
import { assertFinite as assertFiniteRef, NonFiniteError, ShapeError } from '../../errors.js';
import { inWasm, wasmKernels, type WasmExports } from '../runtime/wasm.js';
import * as ref from './reference.js';
import type { Rope } from './reference.js';

/** The kernels, when loaded and every array lives in the arena; null sends the call to the reference. */
function arena(...arrays: Float32Array[]): WasmExports | null {
  const k = wasmKernels();
  if (!k) return null;
  for (const a of arrays) if (!inWasm(k, a)) return null;
  return k.exports;
}

/** The kernels trust their sizes: a short view would let them touch its neighbours in the arena. */
function need(what: string, a: Float32Array, count: number): void {
  if (a.length < count) throw new ShapeError(`${what}: ${a.length} values, the op needs ${count}`);
}

/** See reference.ts rmsNorm (out may alias x). */
export function rmsNorm(out: Float32Array, x: Float32Array, w: Float32Array, n: number, dim: number, eps: number): void {
  const e = arena(out, x, w);
  if (!e) return ref.rmsNorm(out, x, w, n, dim, eps);
  if (w.length !== dim) throw new ShapeError(`rmsNorm: weight ${w.length} != dim ${dim}`);
  need('rmsNorm x', x, n * dim);
  need('rmsNorm out', out, n * dim);
  e['opRmsNorm']!(out.byteOffset, x.byteOffset, w.byteOffset, n, dim, eps);
}

/** See Rope.apply: rotates x [n, heads, headDim] in place with a table from rope.table(). */
export function applyRope(rope: Rope, x: Float32Array, n: number, heads: number, headDim: number, tab: { cos: Float32Array; sin: Float32Array }): void {
  const e = arena(x, tab.cos, tab.sin);
  if (!e) return rope.apply(x, n, heads, headDim, tab);
  if (rope.dims > headDim) throw new ShapeError(`rope: ${rope.dims} rotary dims > head dim ${headDim}`);
  need('rope x', x, n * heads * headDim);
  need('rope cos', tab.cos, (n * rope.dims) / 2);
  need('rope sin', tab.sin, (n * rope.dims) / 2);
  e['opRope']!(x.byteOffset, n, heads, headDim, rope.dims, rope.style === 'neox' ? 1 : 0, tab.cos.byteOffset, tab.sin.byteOffset);
}

/** See reference.ts gatedAct: gate = act(gate) * up over n values. */
export function gatedAct(act: 'silu' | 'gelu', gate: Float32Array, up: Float32Array, n: number): void {
  const e = arena(gate, up);
  if (!e) return ref.gatedAct(act, gate, up, n);
  need('gatedAct gate', gate, n);
  need('gatedAct up', up, n);
  e[act === 'silu' ? 'opSiluMul' : 'opGeluMul']!(gate.byteOffset, up.byteOffset, n);
}

/** x -> cap * tanh(x / cap) in place. */
export function softcap(x: Float32Array, cap: number): void {
  const e = arena(x);
  if (!e) return ref.softcap(x, cap);
  e['opSoftcap']!(x.byteOffset, x.length, cap);
}

/** x += y over n values. */
export function addInPlace(x: Float32Array, y: Float32Array, n: number): void {
  const e = arena(x, y);
  if (!e) return ref.addInPlace(x, y, n);
  need('add x', x, n);
  need('add y', y, n);
  e['opAdd']!(x.byteOffset, y.byteOffset, n);
}

/** x[t] += b for n rows of dim values. */
export function addRows(x: Float32Array, b: Float32Array, n: number, dim: number): void {
  const e = arena(x, b);
  if (!e) return ref.addRows(x, b, n, dim);
  if (b.length !== dim) throw new ShapeError(`addRows: bias ${b.length} != dim ${dim}`);
  need('addRows x', x, n * dim);
  e['opAddRows']!(x.byteOffset, b.byteOffset, n, dim);
}

/** x *= k in place. */
export function scale(x: Float32Array, k: number): void {
  const e = arena(x);
  if (!e) return ref.scale(x, k);
  e['opScale']!(x.byteOffset, x.length, k);
}

/** Throws NonFiniteError at the first NaN/Inf in x (see errors.ts assertFinite). */
export function assertFinite(where: string, x: Float32Array): void {
  const e = arena(x);
  if (!e) return assertFiniteRef(where, x);
  const i = e['opFirstNonFinite']!(x.byteOffset, x.length) as number;
  if (i >= 0) throw new NonFiniteError(where, i, x[i]!);
}
