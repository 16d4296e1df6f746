// Memory spaces: wasm32 caps one linear memory at 4 GiB, so weights and caches beyond that live in several
// memories, each an Arena with its own instance of the kernel module (kernels address one memory). Space 0
// is the primary one (activations, workspaces); a weight or a cache layer is placed whole in one space, and
// activations, being small, are copied to where a kernel's data lives.
import { Arena } from './arena.js';
import { ArgumentError, OutOfMemoryError } from '../../errors.js';
import { inWasm, instantiateOver, wasmKernels, type WasmKernels } from './wasm.js';
import { unitScratchBytes } from './unit-jobs.js';

/** Spaces a process may have: each reserves its limit of address space (32 x 4 GiB = 128 GiB). */
export const MAX_SPACES = 32;
/**
 * Room a space keeps when weights and caches are placed: the primary one for activations (prefill of long
 * prompts on big models), the others for the staging, layouts and scratch their kernels use.
 */
const PRIMARY_HEADROOM = 512 << 20;
const SPACE_HEADROOM = 96 << 20;
/** At least room for the unit scratch (unit-jobs.ts) of the calling thread and a few workers, and q rows. */
const scratchHeadroom = () => 4 * unitScratchBytes() + (1 << 20);

const extra: WasmKernels[] = [];
const added: (() => void)[] = [];

/** Bytes one space may grow to: KVPACK_SPACE_MIB (tests and benchmarks force small ones), else 4 GiB. */
let cap = envCap();

function envCap(): number {
  const mib = typeof process !== 'undefined' ? Number(process.env?.['KVPACK_SPACE_MIB'] ?? '') : NaN;
  return Number.isFinite(mib) && mib >= 1 ? Math.min(4096, Math.floor(mib)) * 2 ** 20 : 2 ** 32;
}

/**
 * Caps every space at `bytes` (whole 64 KiB pages; spaces already past it keep what they hold). Lets tests
 * run the multi-memory path with small memories; also the option to keep one memory's reservation small.
 */
export function setSpaceCap(bytes: number): void {
  if (!Number.isFinite(bytes) || bytes < 1 << 20) throw new ArgumentError(`space cap must be at least 1 MiB, got ${bytes}`);
  cap = Math.min(2 ** 32, bytes);
  for (const k of spaces()) k.arena.setLimit(cap);
}

export function spaceCap(): number {
  return cap;
}

/** Every space so far, primary first (empty without the wasm kernels). */
export function spaces(): readonly WasmKernels[] {
  const k = wasmKernels();
  if (!k) return [];
  if (k.arena.limit > cap && extra.length === 0) k.arena.setLimit(cap);
  return extra.length ? [k, ...extra] : [k];
}

/** The space whose memory `a` is a view of, or null (a JS array). */
export function spaceOf(a: ArrayBufferView): WasmKernels | null {
  const k = wasmKernels();
  if (!k) return null;
  if (inWasm(k, a)) return k;
  for (const s of extra) if (inWasm(s, a)) return s;
  return null;
}

/** A cache layer's promise: it may grow to `bytes` in its space, and holds `held()` of them now. */
interface Pledge {
  readonly bytes: number;
  readonly held: () => number;
}
const pledges = new Map<WasmKernels, Set<Pledge>>();

/**
 * Counts a cache layer's growth to `bytes` against space k's room, so caches placed after it leave it room
 * to reach its capacity. Returns the release (call it when the layer is freed).
 */
export function pledge(k: WasmKernels, bytes: number, held: () => number): () => void {
  const p: Pledge = { bytes, held };
  let set = pledges.get(k);
  if (!set) pledges.set(k, (set = new Set()));
  set.add(p);
  return () => set.delete(p);
}

/** Bytes pledged in space k beyond what the pledging layers hold yet. */
function pledgedBytes(k: WasmKernels): number {
  let sum = 0;
  for (const p of pledges.get(k) ?? []) sum += Math.max(0, p.bytes - p.held());
  return sum;
}

/** Bytes a space can still take for placement: what is unused, less open pledges and its headroom. */
export function placeableBytes(k: WasmKernels): number {
  const limit = k.arena.limit;
  const headroom = Math.max(scratchHeadroom(), k.index === 0 ? Math.min(PRIMARY_HEADROOM, limit / 4) : Math.min(SPACE_HEADROOM, limit / 8));
  return k.arena.unused - pledgedBytes(k) - headroom;
}

/**
 * The space a weight or cache layer of `bytes` goes to: the first with room for it, else a new one.
 * Throws OutOfMemoryError when it is bigger than one space or MAX_SPACES are in use.
 */
export function placeIn(what: string, bytes: number): WasmKernels {
  const all = spaces();
  if (all.length === 0) throw new OutOfMemoryError(`${what}: the wasm kernels are not loaded`);
  const size = Arena.sizeOf(bytes);
  for (const k of all) if (placeableBytes(k) >= size && k.arena.fits(size)) return k;
  if (size > cap - (1 << 20)) throw new OutOfMemoryError(`${what}: ${bytes} B is more than one memory space holds (${cap} B; wasm32 caps a memory at 4 GiB)`);
  if (all.length >= MAX_SPACES) throw new OutOfMemoryError(`${what}: ${bytes} B more would need a memory space beyond ${MAX_SPACES} (${usedBytes()} B in use)`);
  const primary = all[0]!;
  const k = instantiateOver(new Arena(16, 1024, cap), all.length, primary.module);
  extra.push(k);
  for (const f of added) f();
  return k;
}

/** Bytes allocated over all spaces. */
export function usedBytes(): number {
  return spaces().reduce((a, k) => a + k.arena.allocated, 0);
}

/** Runs `f` whenever a space is added (the worker pool then instantiates the kernels over it too). */
export function onSpaceAdded(f: () => void): void {
  added.push(f);
}
