// The kernel registry: kernels keyed `format:op:precision:impl`. Wasm kernels are the rows of the kernel
// table (table.ts, plain data); JS kernels come from registerKernel ('js', or 'ref' to replace a reference
// kernel); reference kernels exist for every format, built from its encodeBlock/decodeBlock. The engine,
// attention and the lab resolve kernels here, never by name (TF.js kernel_registry is the model).
import { getFormat } from '../../formats/registry.js';
import { ArgumentError, KernelError } from '../../errors.js';
import type { KvFormat } from '../../formats/format.js';
import { refKernel } from './ref-ops.js';
import { abiFits } from './abi.js';
import { KERNEL_TABLE, kernelKey, tableRow, type KernelRow, type Op, type Precision } from './table.js';
import { wasmKernels } from '../runtime/wasm.js';
import { wasmAdapter } from './wasm-ops.js';
import { unitKernel, type UnitKernel } from './attend-unit.js';

export type { Op, Precision, KernelRow };
/** 'wasm': a kernel table row. 'js': a JS kernel given to registerKernel. 'ref': the reference kernel. */
export type Impl = 'ref' | 'wasm' | 'js';
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
export type ScoresKernel = (
  q: Float32Array,
  qOff: number,
  G: number,
  headDim: number,
  src: Uint8Array,
  base: number,
  t0: number,
  tokens: number,
  out: Float32Array,
  outOff: number,
  outStride: number,
) => void;
/** accumulate: acc[accOff + g*headDim + c] += sum_t w[wOff + g*wStride + t] * v_t[c]. */
export type AccumulateKernel = (
  w: Float32Array,
  wOff: number,
  wStride: number,
  G: number,
  headDim: number,
  src: Uint8Array,
  base: number,
  t0: number,
  tokens: number,
  acc: Float32Array,
  accOff: number,
) => void;

export interface KernelFor {
  encode: EncodeKernel;
  decode: DecodeKernel;
  scores: ScoresKernel;
  accumulate: AccumulateKernel;
}

/** A kernel with the implementation that actually served the lookup and its registry key. */
export interface Resolved<O extends Op> {
  readonly fn: KernelFor[O];
  readonly impl: Impl;
  readonly key: string;
}

/**
 * How one run is read in one attention call: a wasm table row, or a JS kernel (typed arrays over arena
 * memory). `custom`: a registerKernel kernel, which exists on this thread only (pool workers cannot call it).
 * `unit`: the callable runUnit takes, bound by attend-unit.ts unitKernel as the pool workers bind theirs.
 */
export interface Route {
  readonly key: string;
  readonly impl: Impl;
  readonly row: KernelRow | null;
  readonly custom: boolean;
  readonly unit: UnitKernel;
}

/** registerKernel's kernels ('js' and 'ref' keys), f32 precision. */
const custom = new Map<string, KernelFor[Op]>();
const generatedRef = new Map<string, KernelFor[Op]>();
const adapters = new Map<string, KernelFor[Op]>();
let version = 0;

/** Bumped by every (un)registration: callers that memoize a lookup compare it. */
export function registryVersion(): number {
  return version;
}

/**
 * Registers a JS kernel under `format:op:f32:impl` ('js', or 'ref' to replace the reference kernel). A key
 * already taken throws DUPLICATE_KERNEL at once, including a kernel table row's ('wasm'): no silent
 * replacement, whenever it happens.
 */
export function registerKernel<O extends Op>(formatId: string, op: O, impl: Impl, fn: KernelFor[O]): void {
  getFormat(formatId);
  if (!OPS.includes(op)) throw new ArgumentError(`registerKernel: unknown op '${op}' (known: ${OPS.join(', ')})`);
  const k = kernelKey(formatId, op, 'f32', impl);
  if (custom.has(k) || tableRow(k)) throw new KernelError('DUPLICATE_KERNEL', `kernel '${k}' is already registered`);
  if (impl !== 'js' && impl !== 'ref')
    throw new ArgumentError(`registerKernel: wasm kernels are rows of the kernel table (src/kernels/attention/table.ts); register a JS kernel as 'js'`);
  custom.set(k, fn as KernelFor[Op]);
  version++;
}

/** Removes a registerKernel kernel; false when none was registered under that key. */
export function unregisterKernel(formatId: string, op: Op, impl: Impl): boolean {
  const gone = custom.delete(kernelKey(formatId, op, 'f32', impl));
  if (gone) version++;
  return gone;
}

/** The table row for format:op:precision when the wasm module loaded (and has the export). */
function loadedRow(formatId: string, op: Op, precision: Precision): KernelRow | undefined {
  const k = wasmKernels();
  const r = k ? tableRow(kernelKey(formatId, op, precision, 'wasm')) : undefined;
  return r && typeof k!.exports[r.export] === 'function' ? r : undefined;
}

/** True when a kernel is registered under exactly this key (no fallback). */
export function hasKernel(formatId: string, op: Op, impl: Impl, precision: Precision = 'f32'): boolean {
  if (impl === 'wasm') return loadedRow(formatId, op, precision) !== undefined;
  return precision === 'f32' && custom.has(kernelKey(formatId, op, 'f32', impl));
}

function refFor<O extends Op>(f: KvFormat, op: O): Resolved<O> {
  const k = kernelKey(f.id, op, 'f32', 'ref');
  const mine = custom.get(k);
  if (mine) return { fn: mine as KernelFor[O], impl: 'ref', key: k };
  let gen = generatedRef.get(k);
  if (!gen) generatedRef.set(k, (gen = refKernel(f, op)));
  return { fn: gen as KernelFor[O], impl: 'ref', key: k };
}

export interface LookupOptions {
  /** Resolve for this head dim: a wasm row whose ABI does not serve it resolves to the reference. */
  readonly headDim?: number;
  /** Query rows per call (channel-axis scores fold q into the tile). */
  readonly rows?: number;
}

/**
 * The f32 kernel for format:op. With `impl`, that implementation or the reference when it is absent; without,
 * the best one: a registered JS kernel, else the wasm row, else the reference. Wasm kernels take typed arrays
 * here (wasm-ops.ts adapts them) and run the reference for arrays outside arena memory.
 */
export function lookupKernel<O extends Op>(formatId: string, op: O, impl?: Impl, opts: LookupOptions = {}): Resolved<O> {
  const f = getFormat(formatId);
  if (impl === undefined || impl === 'js') {
    const k = kernelKey(formatId, op, 'f32', 'js');
    const js = custom.get(k);
    if (js) return { fn: js as KernelFor[O], impl: 'js', key: k };
  }
  if (impl === undefined || impl === 'wasm') {
    const row = loadedRow(formatId, op, 'f32');
    if (row && (opts.headDim === undefined || abiFits(row.abi, f, opts.headDim, opts.rows))) {
      const k = kernelKey(formatId, op, 'f32', 'wasm');
      let fn = adapters.get(k);
      if (!fn) adapters.set(k, (fn = wasmAdapter(f, row, refFor(f, op).fn)));
      return { fn: fn as KernelFor[O], impl: 'wasm', key: k };
    }
  }
  return refFor(f, op);
}

/** What may serve one format's op at one precision (a JS kernel, a table row, the reference), found once. */
interface Candidates {
  readonly js: Route | null;
  readonly wasm: Route | null;
  readonly ref: Route | null;
}
type Memo = { scores: Partial<Record<Precision, Candidates>>; accumulate: Partial<Record<Precision, Candidates>> };
let memo = new WeakMap<KvFormat, Memo>();
let memoVersion = -1;

function candidates(f: KvFormat, op: 'scores' | 'accumulate', precision: Precision): Candidates {
  if (memoVersion !== version) {
    memo = new WeakMap();
    memoVersion = version;
  }
  let m = memo.get(f);
  if (!m) memo.set(f, (m = { scores: {}, accumulate: {} }));
  let c = m[op][precision];
  if (!c) {
    const k = wasmKernels();
    const make = (key: string, impl: Impl, row: KernelRow | null, isCustom: boolean): Route => ({
      key,
      impl,
      row,
      custom: isCustom,
      unit: unitKernel(key, k?.exports ?? {}, (x) => jsKernel(x) as ScoresKernel | AccumulateKernel | undefined),
    });
    const jsKey = kernelKey(f.id, op, 'f32', 'js');
    const refKey = kernelKey(f.id, op, 'f32', 'ref');
    const row = loadedRow(f.id, op, precision);
    m[op][precision] = c = {
      js: precision === 'f32' && custom.has(jsKey) ? make(jsKey, 'js', null, true) : null,
      wasm: row ? make(kernelKey(f.id, op, precision, 'wasm'), 'wasm', row, false) : null,
      ref: precision === 'f32' ? make(refKey, 'ref', null, custom.has(refKey)) : null,
    };
  }
  return c;
}

/**
 * How attention reads a run of format f for `op` at `precision` with head dim D and `rows` query rows per
 * call: a registered JS kernel (f32), else the wasm row if its ABI serves the shape, else (f32) the
 * reference; null when nothing computes at that precision here (callers then use f32). Resolved once per
 * format and registry state, so a call pays a lookup and the ABI's shape test.
 */
export function route(f: KvFormat, op: 'scores' | 'accumulate', precision: Precision, D: number, rows: number): Route | null {
  const c = candidates(f, op, precision);
  if (c.js) return c.js;
  if (c.wasm && abiFits(c.wasm.row!.abi, f, D, rows)) return c.wasm;
  return c.ref;
}

/** The JS kernel (registered or reference) behind a 'js' / 'ref' key; undefined for other keys. */
export function jsKernel(key: string): KernelFor[Op] | undefined {
  const mine = custom.get(key);
  if (mine) return mine;
  const [formatId, op, , impl] = key.split(':');
  return impl === 'ref' ? refFor(getFormat(formatId!), op as Op).fn : undefined;
}

/** The precisions other than f32 the loaded wasm rows offer for format:op (the gate checks each). */
export function variantPrecisions(f: KvFormat, op: Op): Precision[] {
  return KERNEL_TABLE.filter((r) => r.format === f.id && r.op === op && r.precision !== 'f32' && loadedRow(f.id, op, r.precision)).map((r) => r.precision);
}

/** Every registered key: the loaded table rows and the registerKernel kernels (for reports). */
export function registeredKernels(): string[] {
  const rows = KERNEL_TABLE.filter((r) => loadedRow(r.format, r.op, r.precision)).map((r) => kernelKey(r.format, r.op, r.precision, r.impl));
  return [...rows, ...custom.keys()].sort();
}
