// One forward call's activations. With the wasm kernels they share one arena region, so the ops
// (kernels/ops/ops.ts) and the matmuls (kernels/matmul/matmul.ts) read and write them in place; without, plain arrays.
import { ArgumentError, OutOfMemoryError } from '../errors.js';
import { inWasm, wasmKernels, type WasmKernels } from '../kernels/runtime/wasm.js';

const NAMES = ['x', 'xb', 'q', 'k', 'v', 'att', 'gate', 'up', 'logits', 'cosG', 'sinG', 'cosL', 'sinL'] as const;
export type BufferName = (typeof NAMES)[number];
/** Float32 values per buffer for one call. */
export type BufferSizes = Readonly<Record<BufferName, number>>;

/**
 * A region up to this size is kept for the next call (decode steps and prompt chunks of a mid-size model
 * reuse it); a bigger one (a long chunk's all-position logits over a big vocab) is freed after its call.
 */
export const KEEP_BYTES = 64 << 20;
/** Each buffer starts on a cache line (64 bytes), so no two buffers share one. */
const ALIGN = 64;

interface Region {
  off: number;
  bytes: number;
}

/** The region the last call released, waiting for the next (null while a call holds it). */
let spare: Region | null = null;

export class ForwardBuffers {
  private readonly kernels: WasmKernels | null;
  private readonly region: Region | null;
  private readonly sizes: BufferSizes;
  private readonly offsets = new Map<BufferName, number>();
  private views = new Map<BufferName, Float32Array>();
  /** The arena buffer object the views were made from: a new one means memory grew. */
  private mapped: ArrayBufferLike | null = null;
  private released = false;

  private constructor(sizes: BufferSizes) {
    this.sizes = sizes;
    const k = wasmKernels();
    let bytes = 0;
    for (const name of NAMES) {
      this.offsets.set(name, bytes);
      bytes += Math.ceil((sizes[name] * 4) / ALIGN) * ALIGN;
    }
    this.region = k ? take(k, bytes) : null;
    // No kernels, or no room left in wasm32's 4 GiB beside weights and caches: plain arrays (the TS reference ops).
    this.kernels = this.region ? k : null;
    if (!this.region) {
      for (const name of NAMES) this.views.set(name, new Float32Array(sizes[name]));
      return;
    }
    for (const name of NAMES) this.offsets.set(name, this.region.off + this.offsets.get(name)!);
  }

  /** Buffers of the given sizes, in the arena when the kernels are loaded. Call release() when done. */
  static acquire(sizes: BufferSizes): ForwardBuffers {
    return new ForwardBuffers(sizes);
  }

  /** Buffer `name` (exactly its size). Views are re-made when the arena grew since they were taken. */
  get(name: BufferName): Float32Array {
    if (this.released) throw new ArgumentError('ForwardBuffers: used after release()');
    const k = this.kernels;
    if (k && k.arena.memory.buffer !== this.mapped) {
      const buf = k.arena.memory.buffer;
      this.views = new Map(NAMES.map((n) => [n, new Float32Array(buf, this.offsets.get(n)!, this.sizes[n])]));
      this.mapped = buf;
      inWasm(k, this.views.get('x')!);
    }
    return this.views.get(name)!;
  }

  get x(): Float32Array {
    return this.get('x');
  }
  get xb(): Float32Array {
    return this.get('xb');
  }
  get q(): Float32Array {
    return this.get('q');
  }
  get k(): Float32Array {
    return this.get('k');
  }
  get v(): Float32Array {
    return this.get('v');
  }
  get att(): Float32Array {
    return this.get('att');
  }
  get gate(): Float32Array {
    return this.get('gate');
  }
  get up(): Float32Array {
    return this.get('up');
  }
  get logits(): Float32Array {
    return this.get('logits');
  }

  /** Gives the region back: kept for the next call when small enough, else freed. Views die with it. */
  release(): void {
    if (this.released) return;
    this.released = true;
    const k = this.kernels;
    if (!k || !this.region) return;
    this.views.clear();
    this.mapped = null;
    if (this.region.bytes <= KEEP_BYTES && (!spare || spare.bytes < this.region.bytes)) {
      if (spare) k.arena.free(spare.off);
      spare = this.region;
    } else {
      k.arena.free(this.region.off);
    }
  }
}

/** The spare region when it is big enough, else a new one (a too-small spare is freed first); null when the arena is full. */
function take(k: WasmKernels, bytes: number): Region | null {
  if (spare && spare.bytes >= bytes) {
    const r = spare;
    spare = null;
    return r;
  }
  if (spare) {
    k.arena.free(spare.off);
    spare = null;
  }
  try {
    return { off: k.arena.alloc(bytes), bytes };
  } catch (e) {
    // Past the space's limit, or the system refused the grow.
    if (e instanceof OutOfMemoryError) return null;
    throw e;
  }
}
