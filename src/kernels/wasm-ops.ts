// Wraps the wasm exports `<format>_<op>` as registry kernels. A wrapper serves a call only when every
// array is a view of arena memory and the head dim suits the kernel; otherwise it runs the reference.
import { formats } from '../formats/registry.js';
import { rowBytes, type KvFormat } from '../formats/format.js';
import { refKernel } from './ref-ops.js';
import { LLOYD_MAX_4 } from '../numeric/lloydmax.js';
import { inWasm, wasmKernels, MAX_WASM_HEAD_DIM, STAGE_BYTES, TILE_BYTES, type WasmAccum, type WasmDecode, type WasmEncode, type WasmKernels, type WasmScores } from './wasm.js';
import type { AccumulateKernel, DecodeKernel, EncodeKernel, KernelFor, Op, ScoresKernel } from './registry.js';

/** D a multiple of 16 (and of a token-axis block); a channel group's [blockValues, D] tile must fit the tile. */
export function wasmHeadDimOk(f: KvFormat, D: number): boolean {
  if (!(D > 0 && D % 16 === 0 && D <= MAX_WASM_HEAD_DIM)) return false;
  return f.axis === 'token' ? D % f.blockValues === 0 : f.blockValues * D * 4 <= TILE_BYTES;
}

function encodeOp(k: WasmKernels, f: KvFormat, fn: WasmEncode): EncodeKernel {
  const ref = refKernel(f, 'encode');
  return (src, srcOff, srcStride, tokens, D, dst, dstOff) => {
    if (!wasmHeadDimOk(f, D) || !inWasm(k, dst)) return ref(src, srcOff, srcStride, tokens, D, dst, dstOff);
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

function decodeOp(k: WasmKernels, f: KvFormat, fn: WasmDecode): DecodeKernel {
  const ref = refKernel(f, 'decode');
  return (src, base, t0, tokens, D, dst, dstOff) => {
    if (!wasmHeadDimOk(f, D) || !inWasm(k, src) || !inWasm(k, dst)) return ref(src, base, t0, tokens, D, dst, dstOff);
    fn(src.byteOffset + base + t0 * rowBytes(f, D), tokens, D, dst.byteOffset + dstOff * 4);
  };
}

function scoresOp(k: WasmKernels, f: KvFormat, fn: WasmScores): ScoresKernel {
  const ref = refKernel(f, 'scores');
  return (q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride) => {
    if (!wasmHeadDimOk(f, D) || !inWasm(k, q) || !inWasm(k, src) || !inWasm(k, out)) {
      return ref(q, qOff, G, D, src, base, t0, tokens, out, outOff, outStride);
    }
    fn(q.byteOffset + qOff * 4, G, D, src.byteOffset + base + t0 * rowBytes(f, D), tokens, out.byteOffset + outOff * 4, outStride, k.tile);
  };
}

function accumulateOp(k: WasmKernels, f: KvFormat, fn: WasmAccum): AccumulateKernel {
  const ref = refKernel(f, 'accumulate');
  return (w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff) => {
    if (!wasmHeadDimOk(f, D) || !inWasm(k, w) || !inWasm(k, src) || !inWasm(k, acc)) {
      return ref(w, wOff, wStride, G, D, src, base, t0, tokens, acc, accOff);
    }
    fn(w.byteOffset + wOff * 4, wStride, G, D, src.byteOffset + base + t0 * rowBytes(f, D), tokens, acc.byteOffset + accOff * 4, k.tile);
  };
}

// ---- Channel-axis formats (q2c_0): kernels take the run token t0 and walk the groups themselves.

type ChannelRead = (...a: number[]) => void;

/** Levels of q2c_0 codes 0..3, read back through the reference decoder (d = 1.0, every code equal). */
function q2cLevels(f: KvFormat): number[] {
  const block = new Uint8Array(f.blockBytes);
  const out = new Float32Array(f.blockValues);
  return [0, 1, 2, 3].map((code) => {
    block[0] = 0x00;
    block[1] = 0x3c; // f16 1.0
    block.fill(code * 0x55, 2);
    f.decodeBlock(block, 0, out, 0);
    return out[0]!;
  });
}

/** 256 x f32x4 at k.tables: byte b -> levels of its codes for tokens 0..3 (bits 2i..2i+1). */
function fillQ2cTable(k: WasmKernels, f: KvFormat): void {
  const lv = q2cLevels(f);
  const t = new Float32Array(k.arena.memory.buffer, k.tables, 1024);
  for (let b = 0; b < 256; b++) for (let i = 0; i < 4; i++) t[b * 4 + i] = lv[(b >> (2 * i)) & 3]!;
}

function channelOps(k: WasmKernels, f: KvFormat, enc: ChannelRead | undefined, dec: ChannelRead | undefined, sc: ChannelRead | undefined, acc: ChannelRead | undefined): Array<[Op, KernelFor[Op]]> {
  const out: Array<[Op, KernelFor[Op]]> = [];
  const ref = { encode: refKernel(f, 'encode'), decode: refKernel(f, 'decode'), scores: refKernel(f, 'scores'), accumulate: refKernel(f, 'accumulate') };
  const tHi = Math.fround(LLOYD_MAX_4.thresholds[2]);
  if (enc) {
    const fn: EncodeKernel = (src, srcOff, srcStride, tokens, D, dst, dstOff) => {
      if (!wasmHeadDimOk(f, D) || tokens !== f.blockValues || !inWasm(k, dst)) return ref.encode(src, srcOff, srcStride, tokens, D, dst, dstOff);
      if (inWasm(k, src)) return enc(src.byteOffset + srcOff * 4, srcStride, tokens, D, dst.byteOffset + dstOff, tHi);
      const stage = new Float32Array(k.arena.memory.buffer, k.stage, tokens * D);
      for (let t = 0; t < tokens; t++) stage.set(src.subarray(srcOff + t * srcStride, srcOff + t * srcStride + D), t * D);
      enc(k.stage, D, tokens, D, dst.byteOffset + dstOff, tHi);
    };
    out.push(['encode', fn]);
  }
  if (dec) {
    const fn: DecodeKernel = (src, base, t0, tokens, D, dst, dstOff) => {
      if (!wasmHeadDimOk(f, D) || !inWasm(k, src) || !inWasm(k, dst)) return ref.decode(src, base, t0, tokens, D, dst, dstOff);
      dec(src.byteOffset + base, t0, tokens, D, dst.byteOffset + dstOff * 4, k.tile, k.tables);
    };
    out.push(['decode', fn]);
  }
  if (sc) {
    const fn: ScoresKernel = (q, qOff, G, D, src, base, t0, tokens, o, outOff, outStride) => {
      // The folded q (G x D f32) lives in the tile.
      if (!wasmHeadDimOk(f, D) || G * D * 4 > TILE_BYTES || !inWasm(k, q) || !inWasm(k, src) || !inWasm(k, o)) return ref.scores(q, qOff, G, D, src, base, t0, tokens, o, outOff, outStride);
      sc(q.byteOffset + qOff * 4, G, D, src.byteOffset + base, t0, tokens, o.byteOffset + outOff * 4, outStride, k.tile, k.tables);
    };
    out.push(['scores', fn]);
  }
  if (acc) {
    const fn: AccumulateKernel = (w, wOff, wStride, G, D, src, base, t0, tokens, a, accOff) => {
      if (!wasmHeadDimOk(f, D) || !inWasm(k, w) || !inWasm(k, src) || !inWasm(k, a)) return ref.accumulate(w, wOff, wStride, G, D, src, base, t0, tokens, a, accOff);
      acc(w.byteOffset + wOff * 4, wStride, G, D, src.byteOffset + base, t0, tokens, a.byteOffset + accOff * 4, k.tile, k.tables);
    };
    out.push(['accumulate', fn]);
  }
  return out;
}

/** [formatId, op, kernel] for every export `<format>_<op>` of a registered format; empty without wasm. */
export function wasmKernelTable(): Array<[string, Op, KernelFor[Op]]> {
  const k = wasmKernels();
  if (!k) return [];
  const out: Array<[string, Op, KernelFor[Op]]> = [];
  const get = (name: string) => k.exports[name] as ((...a: number[]) => void) | undefined;
  for (const f of formats.values()) {
    const enc = get(`${f.id}_encode`);
    const dec = get(`${f.id}_decode`);
    const sc = get(`${f.id}_scores`);
    const acc = get(`${f.id}_accum`);
    if (f.axis === 'channel') {
      if (!sc) continue;
      // q2c_0's kernels read the level table filled here; KIVI's compute their codes.
      if (f.id === 'q2c_0') fillQ2cTable(k, f);
      for (const [op, fn] of channelOps(k, f, enc, dec, sc, acc)) out.push([f.id, op, fn]);
      continue;
    }
    if (enc) out.push([f.id, 'encode', encodeOp(k, f, enc)]);
    if (dec) out.push([f.id, 'decode', decodeOp(k, f, dec)]);
    if (sc) out.push([f.id, 'scores', scoresOp(k, f, sc)]);
    if (acc) out.push([f.id, 'accumulate', accumulateOp(k, f, acc)]);
  }
  return out;
}
