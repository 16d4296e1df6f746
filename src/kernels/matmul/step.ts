// A forward pass as one step of the kernels: the caller brackets it with begin and end and never touches
// the pool. In between the pool's workers stay awake through the gaps between parallel jobs (matmuls,
// attention: a wake costs ~0.1 ms, a decode step posts a job every ~0.1 ms), and a prefetch is posted here.
import { holdWorkers, releaseWorkers, stopBackground } from '../runtime/pool.js';
import { matmulPrefetch } from './job.js';
import type { PackedWeight } from './weights.js';

/** A weight as the forward pass holds it: its packed form in the arena, or null on the TS path. */
export interface StepWeight {
  readonly packedWeight: PackedWeight | null;
}

export class MatmulStep {
  private ended = false;

  private constructor() {
    holdWorkers();
  }

  /** Starts a step; call end() when the pass is done (also on an error). */
  static begin(): MatmulStep {
    return new MatmulStep();
  }

  /**
   * Has the idle workers read these weights into cache while this thread does other work (a decode step's
   * attention); the next parallel job stops it. Only when every weight is packed (the wasm path).
   */
  prefetch(ws: readonly StepWeight[]): void {
    const packs = ws.map((w) => w.packedWeight);
    if (packs.every((p) => p !== null)) matmulPrefetch(packs as PackedWeight[]);
  }

  /** Ends the step: a prefetch still running is stopped, and the workers may sleep. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    stopBackground();
    releaseWorkers();
  }
}
