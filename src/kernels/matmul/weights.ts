// Packed weights in the arena: where a weight's bytes go at load (the first memory space with room), the
// activation workspaces per space, and the loaded kernels' handle.
import { OutOfMemoryError, WasmUnavailableError } from '../../errors.js';
import { inWasm, wasmKernels, type WasmKernels } from '../runtime/wasm.js';
import { placeIn } from '../runtime/spaces.js';
import { matmulConfig } from './config.js';
import { weightType } from './table.js';

/** A [rows, cols] weight whose packed bytes start at address `ptr` of memory space `space` (spaces.ts). */
export interface PackedWeight {
  readonly name: string;
  readonly space: WasmKernels;
  readonly type: number;
  readonly ptr: number;
  readonly rowBytes: number;
  readonly rows: number;
  readonly cols: number;
}

/** True when the wasm kernels can multiply this type (the weight-type table says so and they are loaded). */
export function wasmMatmulSupports(type: number): boolean {
  return (weightType(type)?.wasm ?? false) && wasmKernels() !== null;
}

/**
 * Reserves `bytes` for a weight in the first memory space with room (spaces.ts: several memories lift
 * wasm32's 4 GiB cap) and returns a view the loader fills in place (a file read lands there directly).
 */
export function allocWeight(name: string, bytes: number): { ptr: number; view: Uint8Array; space: WasmKernels } {
  kernels();
  let space: WasmKernels;
  try {
    space = placeIn(`tensor '${name}'`, bytes);
  } catch (e) {
    throw new OutOfMemoryError(`tensor '${name}' (${bytes} B) does not fit: ${(e as Error).message}`);
  }
  return { ...allocIn(space, name, bytes), space };
}

/** Reserves `bytes` of the primary space (activations, norm weights: where the forward ops read them in place). */
export function allocInArena(name: string, bytes: number): { ptr: number; view: Uint8Array } {
  return allocIn(kernels(), name, bytes);
}

/** `n` f32 values in the primary space when the kernels are loaded (norm weights, biases: the ops read them in place), else null. */
export function arenaVector(name: string, n: number): Float32Array | null {
  if (!wasmKernels()) return null;
  const { view } = allocInArena(name, n * 4);
  return new Float32Array(view.buffer, view.byteOffset, n);
}

function allocIn(k: WasmKernels, name: string, bytes: number): { ptr: number; view: Uint8Array } {
  let ptr: number;
  try {
    ptr = k.arena.alloc(bytes);
  } catch (e) {
    throw new OutOfMemoryError(
      `tensor '${name}' (${bytes} B) does not fit in memory space ${k.index} (${k.arena.allocated} B already used): ${(e as Error).message}`,
    );
  }
  const view = new Uint8Array(k.arena.memory.buffer, ptr, bytes);
  // Registers this buffer object, so views made from it still count as arena memory after a grow.
  inWasm(k, view);
  return { ptr, view };
}

/**
 * The weight repacked in place into the layout the loaded build reads fastest (the build's repackTypeOf: q4_0 ->
 * q4_0x4, q4_K -> q4_Kx4 in relaxed builds, interleave.ts), or null when it stays as it is: no such layout, rows
 * not in whole groups of four, a non-finite block scale (the module declines; such weights run the exact
 * kernels), or repack off (config.ts).
 */
export function repackInArena(w: PackedWeight): PackedWeight | null {
  const e = w.space.exports;
  const target = e['repackTypeOf']!(w.type) as number;
  if (target < 0 || !matmulConfig().repack || w.rows % 4 !== 0 || weightType(target)?.repackOf !== w.type) return null;
  const tmp = w.space.arena.alloc(4 * w.rowBytes);
  try {
    if (e['repackWeight']!(w.type, w.ptr, w.rowBytes, w.rows, tmp) !== 1) return null;
  } finally {
    w.space.arena.free(tmp);
  }
  return { ...w, type: target };
}

/** Returns bytes to the allocator of their space (default the primary one). */
export function freeInArena(ptr: number, space: WasmKernels = kernels()): void {
  space.arena.free(ptr);
}

/** Count of f16 Inf/NaN among `count` values at address ptr of `space`. */
export function arenaHalfNonFinite(ptr: number, count: number, space: WasmKernels = kernels()): number {
  return space.exports['halfNonFinite']!(ptr, count) as number;
}

/** Arena regions reused across calls, grown on demand (offsets stable; views re-created per call). */
export class Workspace {
  private readonly k: WasmKernels;
  private readonly regions = new Map<string, { off: number; bytes: number }>();
  constructor(k: WasmKernels) {
    this.k = k;
  }
  get(key: string, bytes: number): number {
    const r = this.regions.get(key);
    if (r && r.bytes >= bytes) return r.off;
    if (r) this.k.arena.free(r.off);
    // Grow by half again so a slowly rising batch does not reallocate every call.
    const size = Math.max(bytes, r ? Math.ceil(r.bytes * 1.5) : 0);
    const off = this.k.arena.alloc(size);
    this.regions.set(key, { off, bytes: size });
    return off;
  }
}

/** One workspace per memory space: activations are laid out where the weights they meet live. */
const workspaces = new Map<WasmKernels, Workspace>();
export function workspace(k: WasmKernels): Workspace {
  let w = workspaces.get(k);
  if (!w) workspaces.set(k, (w = new Workspace(k)));
  return w;
}

/** The loaded kernels (callers chose this path because they are). */
export function kernels(): WasmKernels {
  const k = wasmKernels();
  if (!k) throw new WasmUnavailableError('wasm kernels unavailable');
  return k;
}
