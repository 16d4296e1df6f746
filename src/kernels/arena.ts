// One wasm linear memory for all packed caches, so kernels read K/V in place (no per-call copies).
import { ArgumentError } from '../errors.js';

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
  private top: number;
  /** Free holes by start offset -> size, coalesced on free. */
  private readonly holes = new Map<number, number>();
  private readonly sizes = new Map<number, number>();
  private allocatedBytes = 0;

  constructor(initialPages = 16, reserved = 1024) {
    this.memory = new WebAssembly.Memory({ initial: initialPages, maximum: MAX_PAGES, shared: true });
    // Offset 0 stays unused so a zero offset can mean "none"; the first bytes are kernel scratch.
    this.top = reserved;
  }

  /** Bytes currently handed out (packed data plus alignment rounding). */
  get allocated(): number {
    return this.allocatedBytes;
  }

  alloc(bytes: number): number {
    if (!Number.isInteger(bytes) || bytes < 0) throw new ArgumentError(`arena.alloc: bad size ${bytes}`);
    const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
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
      const pages = Math.max(GROW_MIN_PAGES, Math.ceil((end - have) / PAGE));
      if (have / PAGE + pages > MAX_PAGES) {
        throw new ArgumentError(`arena: ${bytes} more bytes would exceed wasm32's 4 GiB linear memory`);
      }
      this.memory.grow(pages);
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

  u8(): Uint8Array {
    return new Uint8Array(this.memory.buffer);
  }

  f32(): Float32Array {
    return new Float32Array(this.memory.buffer);
  }

  private take(off: number, size: number): number {
    this.sizes.set(off, size);
    this.allocatedBytes += size;
    new Uint8Array(this.memory.buffer, off, size).fill(0);
    return off;
  }
}

let shared: Arena | null = null;

/** The process-wide arena every cache allocates from (kernels are instantiated over its memory). */
export function sharedArena(): Arena {
  shared ??= new Arena();
  return shared;
}
