// The kernel registry: kernels keyed `format:op:impl`; a missing fast kernel falls back to the reference.
// The engine and the lab look kernels up here, never by name (TF.js kernel_registry is the model).
import { getFormat } from '../formats/registry.js';
import { KvpackError } from '../errors.js';
import { refKernel } from './ref-ops.js';
import { wasmKernelTable } from './wasm-ops.js';

export type Op = 'encode' | 'decode' | 'scores' | 'accumulate';
export type Impl = 'ref' | 'wasm';
export const OPS: readonly Op[] = ['encode', 'decode', 'scores', 'accumulate'];

/**
 * encode: `tokens` rows of one kv head, src row t at srcOff + t*srcStride (headDim values), into dst at
 * dstOff. Token axis: tokens x rowBytes. Channel axis: tokens == blockValues, headDim blocks in channel order.
 */
export type EncodeKernel = (src: Float32Array, srcOff: number, srcStride: number, tokens: number, headDim: number, dst: Uint8Array, dstOff: number) => void;
/**
 * The three read ops address one kv head's run: `base` is the byte offset of its token 0 (token axis) or
 * group 0 (channel axis); they cover run tokens [t0, t0 + tokens).
 * decode: dst[dstOff + t*headDim + c] = value (t, c).
 */
export type DecodeKernel = (src: Uint8Array, base: number, t0: number, tokens: number, headDim: number, dst: Float32Array, dstOff: number) => void;
/** scores: out[outOff + g*outStride + t] = dot(q[qOff + g*headDim ..], k_t) for g < G (q already scaled). */
export type ScoresKernel = (q: Float32Array, qOff: number, G: number, headDim: number, src: Uint8Array, base: number, t0: number, tokens: number, out: Float32Array, outOff: number, outStride: number) => void;
/** accumulate: acc[accOff + g*headDim + c] += sum_t w[wOff + g*wStride + t] * v_t[c]. */
export type AccumulateKernel = (w: Float32Array, wOff: number, wStride: number, G: number, headDim: number, src: Uint8Array, base: number, t0: number, tokens: number, acc: Float32Array, accOff: number) => void;

export interface KernelFor {
  encode: EncodeKernel;
  decode: DecodeKernel;
  scores: ScoresKernel;
  accumulate: AccumulateKernel;
}

/** A kernel with the implementation that actually served the lookup. */
export interface Resolved<O extends Op> {
  readonly fn: KernelFor[O];
  readonly impl: Impl;
}

const table = new Map<string, KernelFor[Op]>();
const generatedRef = new Map<string, KernelFor[Op]>();
let wasmRegistered = false;

function key(formatId: string, op: Op, impl: Impl): string {
  return `${formatId}:${op}:${impl}`;
}

/** Registers a kernel; a second registration of the same key throws (no silent replacement). */
export function registerKernel<O extends Op>(formatId: string, op: O, impl: Impl, fn: KernelFor[O]): void {
  const k = key(formatId, op, impl);
  if (table.has(k)) throw new KvpackError('DUPLICATE_KERNEL', `kernel '${k}' is already registered`);
  table.set(k, fn as KernelFor[Op]);
}

function ensureWasm(): void {
  if (wasmRegistered) return;
  wasmRegistered = true;
  for (const [formatId, op, fn] of wasmKernelTable()) registerKernel(formatId, op, 'wasm', fn);
}

/** True when a kernel is registered under exactly this key (no fallback). */
export function hasKernel(formatId: string, op: Op, impl: Impl): boolean {
  ensureWasm();
  return table.has(key(formatId, op, impl));
}

/**
 * The kernel for format:op:impl, or the reference kernel when that impl is not registered. Reference
 * kernels exist for every registered format (built from its encodeBlock/decodeBlock).
 */
export function lookupKernel<O extends Op>(formatId: string, op: O, impl: Impl = 'wasm'): Resolved<O> {
  ensureWasm();
  const hit = table.get(key(formatId, op, impl));
  if (hit) return { fn: hit as KernelFor[O], impl };
  const ref = table.get(key(formatId, op, 'ref'));
  if (ref) return { fn: ref as KernelFor[O], impl: 'ref' };
  const k = key(formatId, op, 'ref');
  let gen = generatedRef.get(k);
  if (!gen) {
    gen = refKernel(getFormat(formatId), op);
    generatedRef.set(k, gen);
  }
  return { fn: gen as KernelFor[O], impl: 'ref' };
}

/** Every registered key (for reports). */
export function registeredKernels(): string[] {
  ensureWasm();
  return [...table.keys()].sort();
}
