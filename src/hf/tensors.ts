// safetensors tensors as the engine's lazy ModelTensors (GGUF dims order, ggml types): matrices keep their
// dtype and are read from the file when placed (straight into the caller's memory, or through one head of
// scratch when llama's q/k rows are permuted); 1-D tensors become f32 as llama.cpp's converter stores them.
import { ArgumentError, FileFormatError } from '../errors.js';
import type { ModelTensor } from '../gguf/model.js';
import { readInto } from '../gguf/source.js';
import { GGML } from '../gguf/types.js';
import { bf16ToFp32, fp16ToFp32 } from '../numeric/half.js';
import { SAFETENSORS_DTYPES, type SafetensorsTensor } from './safetensors.js';

/**
 * Within each group of `rows` rows (one head), the source row of output row r. HF rotates the two halves
 * of a head (rotate-half); llama.cpp's `llama` arch rotates neighbouring pairs, so its converter interleaves
 * the halves: output rows (2i, 2i+1) are source rows (i, rows/2 + i) (convert_hf_to_gguf's permute).
 */
export function interleavedHalvesSource(r: number, rows: number): number {
  return (r % 2) * (rows / 2) + Math.floor(r / 2);
}

/** Row permutation applied within consecutive groups of `groupRows` rows (one head each). */
export interface RowPermutation {
  readonly groupRows: number;
  readonly source: (r: number, groupRows: number) => number;
}

function checkRange(t: SafetensorsTensor, nbytes: number, dst: Uint8Array, at: number): void {
  if (!Number.isSafeInteger(at) || at < 0 || at + dst.length > nbytes) {
    throw new ArgumentError(`${t.source.name}: read of ${dst.length} B at ${at} is outside tensor '${t.name}' (${nbytes} B)`);
  }
}

/**
 * A 2-D tensor as stored (its dtype, dims [in, out]); `rows` keeps only the first rows (gemma3's embedding
 * past its vocabulary), `perm` reorders rows within each head.
 */
export function matrixTensor(t: SafetensorsTensor, o: { rows?: number; perm?: RowPermutation } = {}): ModelTensor {
  if (t.shape.length !== 2) throw new FileFormatError('hf', `${t.source.name}: tensor '${t.name}' has shape [${t.shape.join(', ')}], expected a matrix`);
  const [out, cols] = t.shape as [number, number];
  const rows = Math.min(o.rows ?? out, out);
  const rowBytes = cols * SAFETENSORS_DTYPES[t.dtype].bytes;
  const nbytes = rows * rowBytes;
  const perm = o.perm;
  if (perm && (perm.groupRows < 2 || perm.groupRows % 2 !== 0 || out % perm.groupRows !== 0)) {
    throw new FileFormatError('hf', `${t.source.name}: tensor '${t.name}': ${out} rows do not split into heads of an even ${perm.groupRows} rows`);
  }
  const read = (dst: Uint8Array, at: number): void => {
    checkRange(t, nbytes, dst, at);
    if (!perm) return readInto(t.source, t.offset + at, dst);
    // One head at a time: read its rows, reorder them, copy the part of it the caller asked for.
    const groupBytes = perm.groupRows * rowBytes;
    const stored = new Uint8Array(groupBytes);
    const ordered = new Uint8Array(groupBytes);
    for (let g = Math.floor(at / groupBytes); g * groupBytes < at + dst.length; g++) {
      readInto(t.source, t.offset + g * groupBytes, stored);
      for (let r = 0; r < perm.groupRows; r++) {
        const s = perm.source(r, perm.groupRows) * rowBytes;
        ordered.set(stored.subarray(s, s + rowBytes), r * rowBytes);
      }
      const lo = Math.max(at, g * groupBytes);
      const hi = Math.min(at + dst.length, (g + 1) * groupBytes);
      dst.set(ordered.subarray(lo - g * groupBytes, hi - g * groupBytes), lo - at);
    }
  };
  return Object.freeze({
    type: SAFETENSORS_DTYPES[t.dtype].ggml,
    dims: [cols, rows],
    nbytes,
    get data(): Uint8Array {
      const b = new Uint8Array(nbytes);
      read(b, 0);
      return b;
    },
    readInto: (dst: Uint8Array, at = 0) => read(dst, at),
  });
}

/** A 1-D tensor widened to f32, plus `shift` (gemma's norms), optionally permuted like its matrix (q/k biases). */
export function vectorTensor(t: SafetensorsTensor, o: { shift?: number; perm?: RowPermutation } = {}): ModelTensor {
  if (t.shape.length !== 1) throw new FileFormatError('hf', `${t.source.name}: tensor '${t.name}' has shape [${t.shape.join(', ')}], expected a vector`);
  const n = t.shape[0]!;
  const perm = o.perm;
  if (perm && (perm.groupRows < 2 || perm.groupRows % 2 !== 0 || n % perm.groupRows !== 0)) {
    throw new FileFormatError('hf', `${t.source.name}: tensor '${t.name}': ${n} values do not split into heads of an even ${perm.groupRows}`);
  }
  // Small (norms, biases): converted whole on each access, nothing cached.
  const values = (): Uint8Array => {
    const raw = t.source.read(t.offset, t.nbytes);
    const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const x = new Float32Array(n); // [n]
    for (let i = 0; i < n; i++) {
      const v =
        t.dtype === 'F32' ? dv.getFloat32(4 * i, true) : t.dtype === 'F16' ? fp16ToFp32(dv.getUint16(2 * i, true)) : bf16ToFp32(dv.getUint16(2 * i, true));
      x[i] = v + (o.shift ?? 0);
    }
    if (!perm) return new Uint8Array(x.buffer);
    const y = new Float32Array(n);
    for (let g = 0; g < n; g += perm.groupRows) for (let r = 0; r < perm.groupRows; r++) y[g + r] = x[g + perm.source(r, perm.groupRows)]!;
    return new Uint8Array(y.buffer);
  };
  return Object.freeze({
    type: GGML.F32,
    dims: [n],
    nbytes: 4 * n,
    get data(): Uint8Array {
      return values();
    },
    readInto: (dst: Uint8Array, at = 0) => {
      checkRange(t, 4 * n, dst, at);
      dst.set(values().subarray(at, at + dst.length));
    },
  });
}
