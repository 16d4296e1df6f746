// Adapts a kernel table row to the registry's typed-array kernel signatures, by its ABI (abi.ts). An
// adapter calls the export of the memory space its output lives in (kernels/runtime/spaces.ts) only when every array is a
// view of that memory and the ABI serves the shape; otherwise it runs the reference kernel it was given.
import { rowBytes, type KvFormat } from '../../formats/format.js';
import { abiFits } from './abi.js';
import { inWasm, STAGE_BYTES, tableAddress, type WasmKernels } from '../runtime/wasm.js';
import { spaceOf } from '../runtime/spaces.js';
import type { AccumulateKernel, DecodeKernel, EncodeKernel, KernelFor, KernelRow, Op, ScoresKernel } from './registry.js';

type Fn = (...a: number[]) => void;

/** The row's export and lookup table in one space, found once per space. */
interface Bound {
  readonly k: WasmKernels;
  readonly fn: Fn;
  readonly table: number;
}

/** The row bound in the space `a` is a view of, or null (a JS array: the reference runs). */
function binder(row: KernelRow): (a: ArrayBufferView) => Bound | null {
  const bound = new Map<WasmKernels, Bound>();
  return (a) => {
    const k = spaceOf(a);
    if (!k) return null;
    let b = bound.get(k);
    if (!b) bound.set(k, (b = { k, fn: k.exports[row.export] as Fn, table: tableAddress(k, row.table) }));
    return b;
  };
}

/** The row's export as a registry kernel; `ref` serves the calls the export cannot. */
export function wasmAdapter(f: KvFormat, row: KernelRow, ref: KernelFor[Op]): KernelFor[Op] {
  const bind = binder(row);
  const param = row.param ?? 0;
  switch (row.abi) {
    case 'encode':
      return tokenEncode(bind, f, ref as EncodeKernel);
    case 'encode-channel':
      return channelEncode(bind, f, param, ref as EncodeKernel);
    case 'decode': {
      const r = ref as DecodeKernel;
      const op: DecodeKernel = (src, base, t0, tokens, D, dst, dstOff) => {
        const b = abiFits('decode', f, D) ? bind(src) : null;
        if (!b || !inWasm(b.k, dst)) return r(src, base, t0, tokens, D, dst, dstOff);
        b.fn(src.byteOffset + base + t0 * rowBytes(f, D), tokens, D, dst.byteOffset + dstOff * 4);
      };
      return op;
    }
    case 'decode-channel': {
      const r = ref as DecodeKernel;
      const op: DecodeKernel = (src, base, t0, tokens, D, dst, dstOff) => {
        const b = abiFits('decode-channel', f, D) ? bind(src) : null;
        if (!b || !inWasm(b.k, dst)) return r(src, base, t0, tokens, D, dst, dstOff);
        b.fn(src.byteOffset + base, t0, tokens, D, dst.byteOffset + dstOff * 4, b.k.tile, b.table);
      };
      return op;
    }
    case 'scores': {
      const r = ref as ScoresKernel;
      const op: ScoresKernel = (q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride) => {
        const b = abiFits('scores', f, D, G) ? bind(src) : null;
        if (!b || !inWasm(b.k, q) || !inWasm(b.k, out)) return r(q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride);
        b.fn(q.byteOffset + qOff * 4, G, D, src.byteOffset + base + t0 * rowBytes(f, D), tokens, out.byteOffset + outOff * 4, outStride, b.k.tile);
      };
      return op;
    }
    case 'scores-channel': {
      const r = ref as ScoresKernel;
      const op: ScoresKernel = (q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride) => {
        const b = abiFits('scores-channel', f, D, G) ? bind(src) : null;
        if (!b || !inWasm(b.k, q) || !inWasm(b.k, out)) return r(q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride);
        b.fn(q.byteOffset + qOff * 4, G, D, src.byteOffset + base, t0, tokens, out.byteOffset + outOff * 4, outStride, b.k.tile, b.table);
      };
      return op;
    }
    case 'accum': {
      const r = ref as AccumulateKernel;
      const op: AccumulateKernel = (w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff) => {
        const b = abiFits('accum', f, D, G) ? bind(src) : null;
        if (!b || !inWasm(b.k, w) || !inWasm(b.k, acc)) return r(w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff);
        b.fn(w.byteOffset + wOff * 4, wStride, G, D, src.byteOffset + base + t0 * rowBytes(f, D), tokens, acc.byteOffset + accOff * 4, b.k.tile);
      };
      return op;
    }
    case 'accum-channel': {
      const r = ref as AccumulateKernel;
      const op: AccumulateKernel = (w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff) => {
        const b = abiFits('accum-channel', f, D, G) ? bind(src) : null;
        if (!b || !inWasm(b.k, w) || !inWasm(b.k, acc)) return r(w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff);
        b.fn(w.byteOffset + wOff * 4, wStride, G, D, src.byteOffset + base, t0, tokens, acc.byteOffset + accOff * 4, b.k.tile, b.table);
      };
      return op;
    }
    case 'scores-int':
      // Integer-q kernels take pre-quantized q (attend.ts); they have no typed-array form.
      return ref;
  }
}

function tokenEncode(bind: (a: ArrayBufferView) => Bound | null, f: KvFormat, ref: EncodeKernel): EncodeKernel {
  return (src, srcOff, srcStride, tokens, D, dst, dstOff) => {
    const b = abiFits('encode', f, D) ? bind(dst) : null;
    if (!b) return ref(src, srcOff, srcStride, tokens, D, dst, dstOff);
    const { k, fn } = b;
    const rb = rowBytes(f, D);
    const dstAt = dst.byteOffset + dstOff;
    if (inWasm(k, src)) return fn(src.byteOffset + srcOff * 4, srcStride, tokens, D, dstAt);
    // JS input: copy rows into the staging area (contiguous, stride D), a chunk at a time.
    const chunk = Math.max(1, Math.floor(STAGE_BYTES / (D * 4)));
    const stage = new Float32Array(k.arena.memory.buffer, k.stage, chunk * D);
    for (let t = 0; t < tokens; t += chunk) {
      const n = Math.min(chunk, tokens - t);
      if (srcStride === D) stage.set(src.subarray(srcOff + t * D, srcOff + (t + n) * D));
      else for (let i = 0; i < n; i++) stage.set(src.subarray(srcOff + (t + i) * srcStride, srcOff + (t + i) * srcStride + D), i * D);
      fn(k.stage, D, n, D, dstAt + t * rb);
    }
  };
}

/** One whole channel group (tokens == blockValues) per call, as the kernel takes it. */
function channelEncode(bind: (a: ArrayBufferView) => Bound | null, f: KvFormat, param: number, ref: EncodeKernel): EncodeKernel {
  return (src, srcOff, srcStride, tokens, D, dst, dstOff) => {
    const b = abiFits('encode-channel', f, D) && tokens === f.blockValues ? bind(dst) : null;
    if (!b) return ref(src, srcOff, srcStride, tokens, D, dst, dstOff);
    const { k, fn } = b;
    if (inWasm(k, src)) return fn(src.byteOffset + srcOff * 4, srcStride, tokens, D, dst.byteOffset + dstOff, param);
    const stage = new Float32Array(k.arena.memory.buffer, k.stage, tokens * D);
    for (let t = 0; t < tokens; t++) stage.set(src.subarray(srcOff + t * srcStride, srcOff + t * srcStride + D), t * D);
    fn(k.stage, D, tokens, D, dst.byteOffset + dstOff, param);
  };
}
