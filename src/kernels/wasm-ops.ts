// Adapts a kernel table row to the registry's typed-array kernel signatures, by its ABI (abi.ts). An
// adapter calls the export only when every array is a view of arena memory and the ABI serves the shape;
// otherwise it runs the reference kernel it was given.
import { rowBytes, type KvFormat } from '../formats/format.js';
import { abiFits } from './abi.js';
import { inWasm, STAGE_BYTES, tableAddress, type WasmKernels } from './wasm.js';
import type { AccumulateKernel, DecodeKernel, EncodeKernel, KernelFor, KernelRow, Op, ScoresKernel } from './registry.js';

type Fn = (...a: number[]) => void;

/** The row's export as a registry kernel; `ref` serves the calls the export cannot. */
export function wasmAdapter(k: WasmKernels, f: KvFormat, row: KernelRow, ref: KernelFor[Op]): KernelFor[Op] {
  const fn = k.exports[row.export] as Fn;
  const table = tableAddress(k, row);
  const param = row.param ?? 0;
  switch (row.abi) {
    case 'encode': return tokenEncode(k, f, fn, ref as EncodeKernel);
    case 'encode-channel': return channelEncode(k, f, fn, param, ref as EncodeKernel);
    case 'decode': {
      const r = ref as DecodeKernel;
      const op: DecodeKernel = (src, base, t0, tokens, D, dst, dstOff) => {
        if (!abiFits('decode', f, D) || !inWasm(k, src) || !inWasm(k, dst)) return r(src, base, t0, tokens, D, dst, dstOff);
        fn(src.byteOffset + base + t0 * rowBytes(f, D), tokens, D, dst.byteOffset + dstOff * 4);
      };
      return op;
    }
    case 'decode-channel': {
      const r = ref as DecodeKernel;
      const op: DecodeKernel = (src, base, t0, tokens, D, dst, dstOff) => {
        if (!abiFits('decode-channel', f, D) || !inWasm(k, src) || !inWasm(k, dst)) return r(src, base, t0, tokens, D, dst, dstOff);
        fn(src.byteOffset + base, t0, tokens, D, dst.byteOffset + dstOff * 4, k.tile, table);
      };
      return op;
    }
    case 'scores': {
      const r = ref as ScoresKernel;
      const op: ScoresKernel = (q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride) => {
        if (!abiFits('scores', f, D, G) || !inWasm(k, q) || !inWasm(k, src) || !inWasm(k, out)) return r(q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride);
        fn(q.byteOffset + qOff * 4, G, D, src.byteOffset + base + t0 * rowBytes(f, D), tokens, out.byteOffset + outOff * 4, outStride, k.tile);
      };
      return op;
    }
    case 'scores-channel': {
      const r = ref as ScoresKernel;
      const op: ScoresKernel = (q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride) => {
        if (!abiFits('scores-channel', f, D, G) || !inWasm(k, q) || !inWasm(k, src) || !inWasm(k, out)) return r(q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride);
        fn(q.byteOffset + qOff * 4, G, D, src.byteOffset + base, t0, tokens, out.byteOffset + outOff * 4, outStride, k.tile, table);
      };
      return op;
    }
    case 'accum': {
      const r = ref as AccumulateKernel;
      const op: AccumulateKernel = (w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff) => {
        if (!abiFits('accum', f, D, G) || !inWasm(k, w) || !inWasm(k, src) || !inWasm(k, acc)) return r(w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff);
        fn(w.byteOffset + wOff * 4, wStride, G, D, src.byteOffset + base + t0 * rowBytes(f, D), tokens, acc.byteOffset + accOff * 4, k.tile);
      };
      return op;
    }
    case 'accum-channel': {
      const r = ref as AccumulateKernel;
      const op: AccumulateKernel = (w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff) => {
        if (!abiFits('accum-channel', f, D, G) || !inWasm(k, w) || !inWasm(k, src) || !inWasm(k, acc)) return r(w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff);
        fn(w.byteOffset + wOff * 4, wStride, G, D, src.byteOffset + base, t0, tokens, acc.byteOffset + accOff * 4, k.tile, table);
      };
      return op;
    }
    case 'scores-int':
      // Integer-q kernels take pre-quantized q (attend.ts); they have no typed-array form.
      return ref;
  }
}

function tokenEncode(k: WasmKernels, f: KvFormat, fn: Fn, ref: EncodeKernel): EncodeKernel {
  return (src, srcOff, srcStride, tokens, D, dst, dstOff) => {
    if (!abiFits('encode', f, D) || !inWasm(k, dst)) return ref(src, srcOff, srcStride, tokens, D, dst, dstOff);
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
function channelEncode(k: WasmKernels, f: KvFormat, fn: Fn, param: number, ref: EncodeKernel): EncodeKernel {
  return (src, srcOff, srcStride, tokens, D, dst, dstOff) => {
    if (!abiFits('encode-channel', f, D) || tokens !== f.blockValues || !inWasm(k, dst)) return ref(src, srcOff, srcStride, tokens, D, dst, dstOff);
    if (inWasm(k, src)) return fn(src.byteOffset + srcOff * 4, srcStride, tokens, D, dst.byteOffset + dstOff, param);
    const stage = new Float32Array(k.arena.memory.buffer, k.stage, tokens * D);
    for (let t = 0; t < tokens; t++) stage.set(src.subarray(srcOff + t * srcStride, srcOff + t * srcStride + D), t * D);
    fn(k.stage, D, tokens, D, dst.byteOffset + dstOff, param);
  };
}
