// One forward call's activations: named buffers in one arena region (kernels/ops/buffers.ts), so the ops and
// the matmuls read and write them in place; without the wasm kernels, plain arrays.
import { ArenaBuffers } from '../kernels/ops/buffers.js';

export { KEEP_BYTES } from '../kernels/ops/buffers.js';

const NAMES = ['x', 'xb', 'q', 'k', 'v', 'att', 'gate', 'up', 'logits', 'cosG', 'sinG', 'cosL', 'sinL'] as const;
export type BufferName = (typeof NAMES)[number];
/** Float32 values per buffer for one call. */
export type BufferSizes = Readonly<Record<BufferName, number>>;

export class ForwardBuffers {
  private readonly b: ArenaBuffers<BufferName>;

  private constructor(sizes: BufferSizes) {
    this.b = new ArenaBuffers(NAMES, sizes);
  }

  /** Buffers of the given sizes, in the arena when the kernels are loaded. Call release() when done. */
  static acquire(sizes: BufferSizes): ForwardBuffers {
    return new ForwardBuffers(sizes);
  }

  /** Buffer `name` (exactly its size). Views are re-made when the arena grew since they were taken. */
  get(name: BufferName): Float32Array {
    return this.b.get(name);
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
    this.b.release();
  }
}
