// Reference kernels for any KvFormat, built from its encodeBlock/decodeBlock: slow, and the definition.
import { blocksFor, rowBytes, MAX_BLOCK_VALUES, type KvFormat } from '../../formats/format.js';
import { readTile, type PackedRun } from './view.js';
import { ShapeError } from '../../errors.js';
import type { AccumulateKernel, DecodeKernel, EncodeKernel, KernelFor, Op, ScoresKernel } from './registry.js';

const TILE = 32;

function refEncode(f: KvFormat): EncodeKernel {
  return (src, srcOff, srcStride, tokens, headDim, dst, dstOff) => {
    const B = f.blockValues;
    const block = new Float32Array(B);
    if (f.axis === 'token') {
      const nb = blocksFor(f, headDim);
      const rb = rowBytes(f, headDim);
      for (let t = 0; t < tokens; t++) {
        const s = srcOff + t * srcStride;
        for (let ib = 0; ib < nb; ib++) {
          const n = Math.min(B, headDim - ib * B);
          for (let j = 0; j < n; j++) block[j] = src[s + ib * B + j]!;
          block.fill(0, n);
          f.encodeBlock(block, 0, dst, dstOff + t * rb + ib * f.blockBytes);
        }
      }
    } else {
      if (tokens !== B) throw new ShapeError(`encode(${f.id}): a channel group needs ${B} tokens, got ${tokens}`);
      for (let c = 0; c < headDim; c++) {
        for (let t = 0; t < B; t++) block[t] = src[srcOff + t * srcStride + c]!;
        f.encodeBlock(block, 0, dst, dstOff + c * f.blockBytes);
      }
    }
  };
}

/** Calls fn(tile, t, n) for tiles of decoded rows covering run tokens [t0, t0+tokens); tile is [n, headDim]. */
function forTiles(
  f: KvFormat,
  src: Uint8Array,
  base: number,
  t0: number,
  tokens: number,
  headDim: number,
  fn: (tile: Float32Array, t: number, n: number) => void,
): void {
  const run: PackedRun = { format: f, bytes: src, offset: base, headStride: 0, first: 0 };
  const tile = new Float32Array(TILE * headDim);
  const scratch = new Float32Array(Math.max(MAX_BLOCK_VALUES, f.blockValues));
  let t = 0;
  while (t < tokens) {
    const runT = t0 + t;
    const n = f.axis === 'token' ? Math.min(TILE, tokens - t) : Math.min(TILE, tokens - t, f.blockValues - (runT % f.blockValues));
    readTile(run, headDim, 0, runT, n, tile, scratch);
    fn(tile, t, n);
    t += n;
  }
}

function refDecode(f: KvFormat): DecodeKernel {
  return (src, base, t0, tokens, headDim, dst, dstOff) => {
    forTiles(f, src, base, t0, tokens, headDim, (tile, t, n) => dst.set(tile.subarray(0, n * headDim), dstOff + t * headDim));
  };
}

function refScores(f: KvFormat): ScoresKernel {
  return (q, qOff, G, headDim, src, base, t0, tokens, out, outOff, outStride) => {
    forTiles(f, src, base, t0, tokens, headDim, (tile, t, n) => {
      for (let g = 0; g < G; g++) {
        const qo = qOff + g * headDim;
        for (let i = 0; i < n; i++) {
          let s = 0;
          for (let c = 0; c < headDim; c++) s += q[qo + c]! * tile[i * headDim + c]!;
          out[outOff + g * outStride + t + i] = s;
        }
      }
    });
  };
}

function refAccumulate(f: KvFormat): AccumulateKernel {
  return (w, wOff, wStride, G, headDim, src, base, t0, tokens, acc, accOff) => {
    forTiles(f, src, base, t0, tokens, headDim, (tile, t, n) => {
      for (let g = 0; g < G; g++) {
        const ao = accOff + g * headDim;
        for (let i = 0; i < n; i++) {
          const wt = w[wOff + g * wStride + t + i]!;
          if (wt === 0) continue;
          for (let c = 0; c < headDim; c++) acc[ao + c] += wt * tile[i * headDim + c]!;
        }
      }
    });
  };
}

/** The reference kernel of `op` for format f. */
export function refKernel<O extends Op>(f: KvFormat, op: O): KernelFor[O] {
  const make: { [K in Op]: (f: KvFormat) => KernelFor[K] } = {
    encode: refEncode,
    decode: refDecode,
    scores: refScores,
    accumulate: refAccumulate,
  };
  return make[op](f) as KernelFor[O];
}
