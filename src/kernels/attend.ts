// attend(): the entry point the cache and engine call. Over a view whose runs live in arena memory it runs
// the fast path (registry kernels, wasm where registered); anything else goes to attendReference.
import { attendReference, type AttendArgs } from '../attention/reference.js';
import { checkView, type MixedView } from '../attention/view.js';
import { ArgumentError, ShapeError } from '../errors.js';
import { lookupKernel } from './registry.js';
import { inWasm, wasmKernels, MAX_WASM_HEAD_DIM, type WasmKernels } from './wasm.js';

export type { AttendArgs };

/** Query rows (queries x heads of one GQA group) per pass: their q rows (64 x D f32) stay in L1. */
const MAX_ROWS = 64;
/** Scores scratch cap per pass (f32 values); prefill chunks its queries to stay under it. */
const MAX_SCORES = 4 << 20;

/**
 * Decode (one query) or causal prefill (many queries), GQA, same contract as attendReference.
 * Fast path numerics: q pre-scaled, dots and weighted sums in float32, softmax numerators in float32 with
 * their sum in float64; the gate bounds the difference from the float64 reference per format (NMSE).
 */
export function attend(args: AttendArgs): void {
  const k = wasmKernels();
  if (!k || !fastPathApplies(k, args.view)) {
    attendReference(args);
    return;
  }
  attendFast(k, args);
}

/** True when every run is arena memory and the head dim suits the f32 kernels. */
export function fastPathApplies(k: WasmKernels, view: MixedView): boolean {
  const D = view.headDim;
  if (D % 16 !== 0 || D > MAX_WASM_HEAD_DIM) return false;
  for (const s of view.segments) if (!inWasm(k, s.k.bytes) || !inWasm(k, s.v.bytes)) return false;
  return true;
}

/** The same argument checks as attendReference, with the same errors. */
function validate(args: AttendArgs): { nq: number; group: number } {
  const { view, q, heads, out } = args;
  const D = view.headDim;
  checkView(view);
  if (heads <= 0 || heads % view.kvHeads !== 0) {
    throw new ShapeError(`attend: ${heads} query heads is not a multiple of ${view.kvHeads} kv heads`);
  }
  if (q.length % (heads * D) !== 0) throw new ShapeError(`attend: q length ${q.length} is not queries x ${heads} x ${D}`);
  const nq = q.length / (heads * D);
  if (out.length !== q.length) throw new ShapeError(`attend: out length ${out.length} != q length ${q.length}`);
  if (args.positions && args.positions.length !== nq) throw new ShapeError(`attend: ${args.positions.length} positions for ${nq} queries`);
  if (view.length === 0) throw new ArgumentError('attend: the cache is empty');
  for (let i = 0; i < nq; i++) {
    const pos = args.positions ? args.positions[i]! : view.length - 1;
    if (!(pos >= 0 && pos < view.length)) throw new ArgumentError(`attend: query position ${pos} outside [0, ${view.length})`);
  }
  return { nq, group: heads / view.kvHeads };
}

/** Arena scratch for one pass, laid out [q | acc | lohi | sums | scores]; grown (never shrunk) on demand. */
interface Scratch {
  off: number;
  bytes: number;
}
let scratch: Scratch | null = null;

function ensureScratch(k: WasmKernels, bytes: number): number {
  if (scratch && scratch.bytes >= bytes) return scratch.off;
  if (scratch) k.arena.free(scratch.off);
  const size = Math.max(bytes, 1 << 20);
  scratch = { off: k.arena.alloc(size), bytes: size };
  return scratch.off;
}

function attendFast(k: WasmKernels, args: AttendArgs): void {
  const { view, heads } = args;
  const { nq, group: G } = validate(args);
  const D = view.headDim;
  const L = view.length;
  const scale = args.scale ?? 1 / Math.sqrt(D);
  const lo = new Int32Array(nq);
  const hi = new Int32Array(nq);
  for (let i = 0; i < nq; i++) {
    const pos = args.positions ? args.positions[i]! : L - 1;
    lo[i] = args.slidingWindow ? Math.max(0, pos - args.slidingWindow + 1) : 0;
    hi[i] = pos + 1;
  }
  // Queries per pass: all G heads of a query together, capped by the q-tile and the scores budget.
  const qc = Math.max(1, Math.min(nq, Math.floor(MAX_ROWS / G), Math.floor(MAX_SCORES / (G * L))));
  const R = qc * G;
  const qB = R * D * 4;
  const lohiB = R * 8;
  const sumsB = R * 8;
  const off = ensureScratch(k, 2 * qB + lohiB + sumsB + R * L * 4);
  // Views made after any grow, so every array below is a view of the current buffer.
  const buf = k.arena.memory.buffer;
  const mem = new Uint8Array(buf);
  const qs = new Float32Array(buf, off, R * D); // [R, D] scaled q rows
  const acc = new Float32Array(buf, off + qB, R * D); // [R, D] weighted V sums
  const lohi = new Int32Array(buf, off + 2 * qB, R * 2); // [R, 2] visible range, relative to L0
  const sums = new Float64Array(buf, off + 2 * qB + lohiB, R); // [R] softmax denominators
  const sOff = off + 2 * qB + lohiB + sumsB;
  const ex = k.exports;
  const kern = view.segments.map((s) => ({
    scores: lookupKernel(s.k.format.id, 'scores').fn,
    accumulate: lookupKernel(s.v.format.id, 'accumulate').fn,
    kAddr: s.k.bytes.byteOffset + s.k.offset,
    vAddr: s.v.bytes.byteOffset + s.v.offset,
  }));

  for (let h = 0; h < view.kvHeads; h++) {
    for (let i0 = 0; i0 < nq; i0 += qc) {
      const n = Math.min(qc, nq - i0);
      const rows = n * G;
      let L0 = L;
      let L1 = 0;
      for (let i = i0; i < i0 + n; i++) {
        L0 = Math.min(L0, lo[i]!);
        L1 = Math.max(L1, hi[i]!);
      }
      const span = L1 - L0;
      const scores = new Float32Array(buf, sOff, rows * span); // [rows, span] scores, then numerators
      // Row r = (query i - i0) * G + g: q head h*G + g of query i.
      for (let i = 0; i < n; i++) {
        for (let g = 0; g < G; g++) {
          const r = i * G + g;
          const src = ((i0 + i) * heads + h * G + g) * D;
          qs.set(args.q.subarray(src, src + D), r * D);
          lohi[2 * r] = lo[i0 + i]! - L0;
          lohi[2 * r + 1] = hi[i0 + i]! - L0;
        }
      }
      ex.scaleF32(off, rows * D, scale);
      // Scores for the whole pass: each K block is read once for every row.
      view.segments.forEach((seg, si) => {
        const a = Math.max(L0, seg.start);
        const b = Math.min(L1, seg.start + seg.count);
        if (a >= b) return;
        const kk = kern[si]!;
        kk.scores(qs, 0, rows, D, mem, kk.kAddr + h * seg.k.headStride, seg.k.first + (a - seg.start), b - a, scores, a - L0, span);
      });
      if (args.softcap) softcapRows(scores, rows, span, lohi, args.softcap);
      ex.softmaxRows(sOff, rows, span, off + 2 * qB, off + 2 * qB + lohiB);
      acc.fill(0, 0, rows * D);
      view.segments.forEach((seg, si) => {
        const a = Math.max(L0, seg.start);
        const b = Math.min(L1, seg.start + seg.count);
        if (a >= b) return;
        const kk = kern[si]!;
        kk.accumulate(scores, a - L0, span, rows, D, mem, kk.vAddr + h * seg.v.headStride, seg.v.first + (a - seg.start), b - a, acc, 0);
      });
      for (let i = 0; i < n; i++) {
        for (let g = 0; g < G; g++) {
          const r = i * G + g;
          const o = ((i0 + i) * heads + h * G + g) * D;
          const inv = 1 / sums[r]!;
          for (let c = 0; c < D; c++) args.out[o + c] = acc[r * D + c]! * inv;
        }
      }
    }
  }
}

/** s -> cap * tanh(s / cap) on each row's visible range (gemma-style logit soft-capping). */
function softcapRows(scores: Float32Array, rows: number, span: number, lohi: Int32Array, cap: number): void {
  for (let r = 0; r < rows; r++) {
    for (let t = lohi[2 * r]!; t < lohi[2 * r + 1]!; t++) {
      const p = r * span + t;
      scores[p] = cap * Math.tanh(scores[p]! / cap);
    }
  }
}
