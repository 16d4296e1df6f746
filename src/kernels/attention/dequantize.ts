// Reads every stored K or V value back out of a mixed view: for tests, negative controls and the lab
// ("dequantize, then float attention" is the comparison packed attention must match).
import { blockScratch } from '../../formats/format.js';
import { exactFromOf, readTile, tileSpan, type MixedView } from './view.js';

/** Returns the stored values as rows [length, kvHeads*headDim], as the query at `at` (default: the last position) reads them. */
export function readStored(view: MixedView, which: 'k' | 'v', at = view.length - 1): Float32Array {
  const D = view.headDim;
  const H = view.kvHeads;
  const out = new Float32Array(view.length * H * D);
  const tile = new Float32Array(32 * D);
  const scratch = blockScratch();
  const x = exactFromOf(view, at);
  for (const seg of view.segments) {
    const run = seg[which];
    const a = Math.max(0, seg.read === 'exact' ? x - seg.start : 0);
    const b = Math.min(seg.count, seg.read === 'packed' ? x - seg.start : Infinity);
    for (let i = a; i < b; ) {
      const n = tileSpan(run, run.first + i, Math.min(32, b - i));
      for (let h = 0; h < H; h++) {
        readTile(run, D, h, run.first + i, n, tile, scratch);
        for (let t = 0; t < n; t++) out.set(tile.subarray(t * D, (t + 1) * D), ((seg.start + i + t) * H + h) * D);
      }
      i += n;
    }
  }
  return out;
}
