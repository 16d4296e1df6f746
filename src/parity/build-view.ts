// Builds MixedViews whose runs live in arena memory, the way the cache lays them out: one allocation per
// run, kv heads back to back (headStride = bytes of one head), encoded through encodeRows.
import { bytesFor, type KvFormat } from '../formats/format.js';
import type { MixedView, PackedRun, Segment } from '../kernels/attention/view.js';
import { encodeRows } from '../kernels/attention/encode.js';
import { sharedArena } from '../kernels/runtime/arena.js';

/** A run being built: values are [kvHeads, tokens, headDim] f32. */
export interface RunSpec {
  readonly format: KvFormat;
  readonly values: Float32Array;
  readonly tokens: number;
}

/** Arena offsets to free once the check is done. */
export type Allocations = number[];

/** Encodes values into a fresh arena allocation; returns the run origin offset and head stride. */
export function encodeRun(spec: RunSpec, kvHeads: number, headDim: number, allocs: Allocations): { offset: number; headStride: number } {
  const { format: f, values, tokens } = spec;
  const headStride = bytesFor(f, tokens, headDim);
  const offset = sharedArena().alloc(Math.max(1, kvHeads * headStride));
  allocs.push(offset);
  const B = f.blockValues;
  for (let h = 0; h < kvHeads; h++) {
    const src = values.subarray(h * tokens * headDim, (h + 1) * tokens * headDim);
    if (f.axis === 'token') {
      encodeRows(f, src, 0, headDim, tokens, headDim, sharedArena().u8(), offset + h * headStride);
    } else {
      // Whole groups of B tokens, the last one zero-padded.
      const groups = Math.ceil(tokens / B);
      const padded = new Float32Array(groups * B * headDim);
      padded.set(src);
      for (let g = 0; g < groups; g++) {
        encodeRows(f, padded, g * B * headDim, headDim, B, headDim, sharedArena().u8(), offset + h * headStride + g * headDim * f.blockBytes);
      }
    }
  }
  return { offset, headStride };
}

/** One stretch of positions: [start, start+count) read from run tokens [first, first+count). */
export interface SegmentSpec {
  readonly region: string;
  readonly count: number;
  readonly k: { readonly run: number; readonly first: number };
  readonly v: { readonly run: number; readonly first: number };
}

/**
 * Encodes every run, then makes views over the arena's current buffer (made after all allocations, since
 * an allocation may grow memory and stale earlier views).
 */
export function buildView(runs: readonly RunSpec[], segments: readonly SegmentSpec[], kvHeads: number, headDim: number, allocs: Allocations): MixedView {
  const placed = runs.map((r) => encodeRun(r, kvHeads, headDim, allocs));
  const bytes = sharedArena().u8();
  const packed = (i: number, first: number): PackedRun => ({
    format: runs[i]!.format,
    bytes,
    offset: placed[i]!.offset,
    headStride: placed[i]!.headStride,
    first,
  });
  let start = 0;
  const segs: Segment[] = segments.map((s) => {
    const seg: Segment = { start, count: s.count, k: packed(s.k.run, s.k.first), v: packed(s.v.run, s.v.first), region: s.region };
    start += s.count;
    return seg;
  });
  return { headDim, kvHeads, length: start, segments: segs };
}

export function freeAll(allocs: Allocations): void {
  for (const off of allocs) sharedArena().free(off);
  allocs.length = 0;
}
