// Loads the embedded kernel module synchronously over the shared arena's memory. When the binary is absent
// (no AssemblyScript build) or instantiation fails (no SIMD, no shared memory), wasmKernels() is null and
// every caller uses the reference kernels.
import { WASM_BASE64, WASM_RELAXED_BASE64 } from './wasm-binary.js';
import { compileKernels, type KernelBuild } from './relaxed.js';
import { sharedArena, type Arena } from './arena.js';
import { KernelError } from '../../errors.js';

type Ptr = number;

/** The module's exports (assembly/index.ts). Pointers are absolute byte addresses into arena memory. */
export interface WasmExports {
  dotRows(q: Ptr, G: number, D: number, rows: Ptr, T: number, rowStride: number, out: Ptr, outStride: number): void;
  axpyRows(w: Ptr, wStride: number, G: number, D: number, rows: Ptr, T: number, rowStride: number, acc: Ptr): void;
  softmaxRows(s: Ptr, R: number, stride: number, lohi: Ptr, sums: Ptr): void;
  softmaxChunk(s: Ptr, R: number, stride: number, lohi: Ptr, m: Ptr, l: Ptr, acc: Ptr, D: number): void;
  quantizeRows(src: Ptr, R: number, D: number, maxq: number, dst: Ptr, dsc: Ptr): void;
  scaleF32(x: Ptr, n: number, k: number): void;
  tileBytes(D: number): number;
  sumF32(p: Ptr, n: number): number;
  /** First byte past the module's static data. */
  heapBase(): number;
  [kernel: string]: (...args: number[]) => number | void;
}

/** Signatures of the per-format kernels `<format>_<op>`. */
export type WasmEncode = (src: Ptr, srcStride: number, T: number, D: number, dst: Ptr) => void;
export type WasmScores = (q: Ptr, G: number, D: number, k: Ptr, T: number, out: Ptr, outStride: number, tile: Ptr) => void;
export type WasmAccum = (w: Ptr, wStride: number, G: number, D: number, v: Ptr, T: number, acc: Ptr, tile: Ptr) => void;
export type WasmDecode = (src: Ptr, T: number, D: number, dst: Ptr) => void;

export interface WasmKernels {
  /** Which memory space this is (spaces.ts): 0 is the primary one, where activations live. */
  readonly index: number;
  readonly arena: Arena;
  /** The compiled module (pool workers instantiate it over the same memory). */
  readonly module: WebAssembly.Module;
  readonly exports: WasmExports;
  /** Arena address of the decode tile every scores/accum kernel may use (TILE_BYTES). */
  readonly tile: number;
  /** Arena address of the staging area where JS-side inputs are copied before an encode (STAGE_BYTES). */
  readonly stage: number;
  /** Arena address of each registered lookup table (registerLookupTables), placed once per instance. */
  readonly tables: ReadonlyMap<readonly number[], number>;
}

/** Lookup tables kernels read (attention's codebooks: kernels/attention/table.ts registers them). */
const lookupTables: (readonly number[])[] = [];
/** Instances made so far: a table registered after one was made is placed there at registration. */
const instances: WasmKernels[] = [];

/**
 * Registers lookup tables every instance places in its arena: at instantiation, or now in instances that
 * exist already (registration happens at module load, never inside a kernel call, so a grow stales no view).
 */
export function registerLookupTables(tables: readonly (readonly number[])[]): void {
  for (const t of tables) {
    if (lookupTables.includes(t)) continue;
    lookupTables.push(t);
    for (const k of instances) place(k, t);
  }
}

function place(k: WasmKernels, t: readonly number[]): void {
  const at = k.arena.alloc(t.length * 4);
  new Float32Array(k.arena.memory.buffer, at, t.length).set(t);
  (k.tables as Map<readonly number[], number>).set(t, at);
}

/** Arena address of a registered lookup table in k, 0 for none (a kernel that reads no table). */
export function tableAddress(k: WasmKernels, table: readonly number[] | undefined): number {
  if (!table) return 0;
  const at = k.tables.get(table);
  if (at === undefined) throw new KernelError('UNKNOWN_KERNEL', 'a kernel reads a lookup table that was never registered (registerLookupTables)');
  return at;
}

/** Tile scratch: tileBytes(D) is 16 KiB up to D = 1024 and 16*D bytes above, so this covers D <= 4096. */
export const TILE_BYTES = 65536;
/** Staging for encode inputs that live in JS arrays; bigger inputs are encoded in chunks. */
export const STAGE_BYTES = 262144;
/** Largest head dim the wasm kernels accept (the tile is sized for it). */
export const MAX_WASM_HEAD_DIM = 4096;

let loaded: WasmKernels | null | undefined;
let failure = '';
let build: KernelBuild | null = null;

function decodeBase64(s: string): Uint8Array<ArrayBuffer> {
  if (typeof Buffer !== 'undefined') return new Uint8Array(Buffer.from(s, 'base64'));
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The instantiated kernels, or null when unavailable (see wasmFailure()). Instantiated once, lazily. */
export function wasmKernels(): WasmKernels | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (typeof process !== 'undefined' && process.env?.['KVPACK_NO_WASM'] === '1') {
    failure = 'disabled by KVPACK_NO_WASM=1';
    return loaded;
  }
  if (!WASM_BASE64) {
    failure = 'no kernel binary (assembly/index.ts was not built)';
    return loaded;
  }
  try {
    build = compileKernels(decodeBase64(WASM_BASE64), WASM_RELAXED_BASE64 ? decodeBase64(WASM_RELAXED_BASE64) : null);
    loaded = instantiateOver(sharedArena(), 0, build.module);
  } catch (e) {
    failure = `instantiation failed: ${(e as Error).message}`;
  }
  return loaded;
}

/**
 * An instance of the kernel module over `arena`'s memory, with its scratch (tile, stage) and lookup tables
 * placed there once, so later kernel calls never grow memory (a grow would stale callers' views).
 */
export function instantiateOver(arena: Arena, index: number, module: WebAssembly.Module): WasmKernels {
  const instance = new WebAssembly.Instance(module, { env: { memory: arena.memory } });
  // Scratch and data start past the module's static data (constant tables), which the arena must not hand out.
  arena.reserveStatic((instance.exports as unknown as WasmExports).heapBase());
  const tile = arena.alloc(TILE_BYTES);
  const stage = arena.alloc(STAGE_BYTES);
  const k: WasmKernels = { index, arena, module, exports: instance.exports as unknown as WasmExports, tile, stage, tables: new Map() };
  for (const t of lookupTables) place(k, t);
  instances.push(k);
  seenBy.set(arena.memory.buffer, arena.memory);
  return k;
}

/** The build the kernels run (relaxed or baseline SIMD, and why), or null when none loaded. */
export function kernelBuild(): Omit<KernelBuild, 'module'> | null {
  wasmKernels();
  return build ? { relaxed: build.relaxed, note: build.note } : null;
}

/** Empty when the kernels loaded; otherwise the reason they did not. */
export function wasmFailure(): string {
  wasmKernels();
  return failure;
}

/**
 * Buffers of each arena memory seen so far, by the memory they belong to. A view made before a memory.grow
 * keeps an older SharedArrayBuffer object of the same (never shrinking) memory: its byteOffset is still a
 * valid address in that memory (and in no other space's).
 */
const seenBy = new WeakMap<ArrayBufferLike, WebAssembly.Memory>();
let last: { buf: ArrayBufferLike | null; mem: WebAssembly.Memory | null } = { buf: null, mem: null };

/** True when `a` is a view of k's memory, current or from before a grow (its byteOffset is then an address). */
export function inWasm(k: WasmKernels, a: ArrayBufferView): boolean {
  const mem = k.arena.memory;
  const ab = a.buffer;
  // The buffer last recorded answers without reading mem.buffer (slow on a shared memory): it is mem's or not.
  if (ab === last.buf) return last.mem === mem;
  const cur = mem.buffer;
  seenBy.set(cur, mem);
  last = { buf: cur, mem };
  return ab === cur || seenBy.get(ab) === mem;
}
