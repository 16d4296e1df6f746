// One wasm linear memory and its first-fit allocator: kernels read weights and K/V in place (no per-call
// copies). Past one memory's cap, spaces.ts adds more memories, each an Arena with its own kernel instance.
import { ArgumentError, KernelError, OutOfMemoryError } from '../../errors.js';

const PAGE = 65536;
/** wasm32 caps linear memory at 4 GiB. */
export const MAX_PAGES = 65536;
/** Grow in big steps: every grow invalidates JS views, and small steps would grow often. */
const GROW_MIN_PAGES = 256; // 16 MiB
const ALIGN = 64;

/**
 * First-fit allocator over a shared WebAssembly.Memory. Offsets are stable; views are not (re-create them
 * with u8()/f32() after any alloc, since alloc may grow the memory).
 */
export class Arena {
  readonly memory: WebAssembly.Memory;
  /** Bytes this arena may grow to (a multiple of 64 KiB pages, at most 4 GiB; tests force small ones). */
  limit: number;
  /** The memory's maximum: setLimit cannot go beyond it. */
  private readonly maxBytes: number;
  private top: number;
  /** Free holes by start offset -> size, coalesced on free. */
  private readonly holes = new Map<number, number>();
  private readonly sizes = new Map<number, number>();
  private allocatedBytes = 0;
  /** End of everything handed out so far (or reserved): above it the memory is as it grew, zero. */
  private dirtyEnd: number;

  constructor(initialPages = 16, reserved = 1024, limitBytes = MAX_PAGES * PAGE) {
    const maxPages = Math.max(initialPages, Math.min(MAX_PAGES, Math.floor(limitBytes / PAGE)));
    this.limit = this.maxBytes = maxPages * PAGE;
    this.memory = new WebAssembly.Memory({ initial: initialPages, maximum: maxPages, shared: true });
    // Offset 0 stays unused so a zero offset can mean "none"; the first bytes are kernel scratch.
    this.top = reserved;
    this.dirtyEnd = reserved;
  }

  /** Bytes currently handed out (packed data plus alignment rounding). */
  get allocated(): number {
    return this.allocatedBytes;
  }

  /** Moves the limit (whole pages, never below what is in use nor above the memory's maximum). */
  setLimit(bytes: number): void {
    const want = Math.floor(bytes / PAGE) * PAGE;
    this.limit = Math.min(this.maxBytes, Math.max(want, Math.ceil(this.top / PAGE) * PAGE));
  }

  /** Bytes an allocation of `bytes` takes (alignment rounding). */
  static sizeOf(bytes: number): number {
    return Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  }

  /** Bytes never handed out or freed again: what more allocations can still get (holes may fragment it). */
  get unused(): number {
    return this.limit - this.allocatedBytes;
  }

  /** True when alloc(bytes) would succeed now (a hole big enough, or room to grow within the limit). */
  fits(bytes: number): boolean {
    const size = Arena.sizeOf(bytes);
    for (const hs of this.holes.values()) if (hs >= size) return true;
    return this.top + size <= this.limit;
  }

  alloc(bytes: number): number {
    if (!Number.isInteger(bytes) || bytes < 0) throw new ArgumentError(`arena.alloc: bad size ${bytes}`);
    const size = Arena.sizeOf(bytes);
    for (const [off, holeSize] of this.holes) {
      if (holeSize >= size) {
        this.holes.delete(off);
        if (holeSize > size) this.holes.set(off + size, holeSize - size);
        return this.take(off, size);
      }
    }
    const off = this.top;
    const end = off + size;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      if (end > this.limit) {
        throw new OutOfMemoryError(
          `${bytes} more bytes would exceed this memory's ${this.limit} B (${this.allocatedBytes} B in use; wasm32 caps one memory at 4 GiB)`,
        );
      }
      const pages = Math.min(this.limit / PAGE - have / PAGE, Math.max(GROW_MIN_PAGES, Math.ceil((end - have) / PAGE)));
      try {
        this.memory.grow(pages);
      } catch (e) {
        // The system refused the pages (RangeError): the machine's memory, not a bug.
        throw new OutOfMemoryError(`the system refused ${pages * PAGE} more bytes of wasm memory (${have} B held here): ${(e as Error).message}`);
      }
    }
    this.top = end;
    return this.take(off, size);
  }

  free(off: number): void {
    const size = this.sizes.get(off);
    if (size === undefined) throw new ArgumentError(`arena.free: ${off} was not allocated`);
    this.sizes.delete(off);
    this.allocatedBytes -= size;
    let start = off;
    let len = size;
    for (const [h, hs] of this.holes) {
      if (h + hs === start) {
        this.holes.delete(h);
        start = h;
        len += hs;
        break;
      }
    }
    const after = this.holes.get(start + len);
    if (after !== undefined) {
      this.holes.delete(start + len);
      len += after;
    }
    this.holes.set(start, len);
  }

  /**
   * Keeps [0, end) out of every allocation: a module's static data lies there, and each instance writes it again.
   * Throws KernelError when something was handed out below `end` already (its bytes would be overwritten).
   */
  reserveStatic(end: number): void {
    if (!Number.isInteger(end) || end < 0) throw new ArgumentError(`arena.reserveStatic: bad offset ${end}`);
    for (const off of this.sizes.keys()) {
      if (off < end) throw new KernelError('STATIC_DATA_OVERLAP', `the kernel module's static data (up to byte ${end}) overlaps an allocation at ${off}`);
    }
    for (const [h, hs] of [...this.holes]) {
      if (h >= end) continue;
      this.holes.delete(h);
      if (h + hs > end) this.holes.set(end, h + hs - end);
    }
    this.top = Math.max(this.top, Math.ceil(end / ALIGN) * ALIGN);
    this.dirtyEnd = Math.max(this.dirtyEnd, this.top);
  }

  u8(): Uint8Array {
    return new Uint8Array(this.memory.buffer);
  }

  f32(): Float32Array {
    return new Float32Array(this.memory.buffer);
  }

  /**
   * Hands out [off, off + size) zeroed. Only bytes below dirtyEnd can hold old data; they are cleared as f64
   * lanes (size and off are multiples of 64): V8 11.3 fills a typed array over shared memory element by
   * element, and a Uint8Array fill ran 148 us per 512 KiB against 19 as f64 (a plain buffer: 11).
   */
  private take(off: number, size: number): number {
    this.sizes.set(off, size);
    this.allocatedBytes += size;
    const dirty = Math.min(off + size, this.dirtyEnd);
    if (dirty > off) new Float64Array(this.memory.buffer, off, (dirty - off) / 8).fill(0);
    this.dirtyEnd = Math.max(this.dirtyEnd, off + size);
    return off;
  }
}

let shared: Arena | null = null;

/** The process-wide arena every cache allocates from (kernels are instantiated over its memory). */
export function sharedArena(): Arena {
  shared ??= new Arena();
  return shared;
}
