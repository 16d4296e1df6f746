// Weight matrices for the forward pass. Quantized tensors stay quantized in memory. With the wasm kernels
// (the default) the packed bytes live in the shared arena and matmul runs there (kernels/matmul/); the
// plain TS path below is the reference: it dequantizes a block of rows into a small float32 scratch and
// multiplies every token by it, so a Q4_K model never exists as float32 in memory.
import { FileFormatError, ShapeError } from '../errors.js';
import { readTensor, tensorBytes, type ModelTensor } from '../gguf/model.js';
import { GGML, ggmlType, ggmlTypeName } from '../gguf/types.js';
import { blockDecoderOf, type BlockDecoder } from '../kernels/matmul/table.js';
import { dequantTypes } from '../kernels/matmul/dequant.js';
import { addRows } from '../kernels/ops/ops.js';
import { allocWeight, arenaVector, arenaHalfNonFinite, freeInArena, repackInArena, wasmMatmulSupports, type PackedWeight } from '../kernels/matmul/weights.js';
import { groupedRow, interleavedLayout } from '../kernels/matmul/interleave.js';
import { wasmMatmul, wasmMatmulGroup } from '../kernels/matmul/matmul.js';

/** Scratch of about this many float32 values per row block: 64 KiB stays in L2 while the batch reuses it. */
const ROW_BLOCK_VALUES = 16384;

/** The block decoder for a weight type (the weight-type table, kernels/matmul/table.ts), or a clear error. */
function blockDecoder(name: string, typeId: number): BlockDecoder {
  const d = blockDecoderOf(typeId);
  if (d) return d;
  const supported = dequantTypes().map(ggmlTypeName).join(', ');
  throw new FileFormatError('gguf', `tensor '${name}': weight type ${ggmlTypeName(typeId)} (id ${typeId}) is not supported (supported: ${supported})`);
}

/** Packed bytes read per step when expanding a file-backed weight to f32: bounds the transient buffer. */
const EXPAND_CHUNK_BYTES = 1 << 20;

/** A [rows, cols] matrix (GGUF dims [cols, rows]): rows are output features, cols input features. */
export class Weight {
  readonly name: string;
  readonly type: number;
  readonly rows: number;
  readonly cols: number;
  /** Set for f32 weights (and for expanded ones): [rows, cols]. */
  private readonly f32: Float32Array | null;
  /** Packed bytes [rows, rowBytes]; null once expanded (the f32 copy is the only one kept). */
  private readonly data: Uint8Array | null;
  /** Set when the weight lives in the wasm arena (f32 when expanded), else the TS path runs. */
  private readonly packed: PackedWeight | null = null;
  private readonly rowBytes: number;
  private readonly blockValues: number;
  private readonly blockBytes: number;
  private readonly decode: BlockDecoder | null;
  private scratch: Float32Array | null = null;
  /** One row's file-layout bytes, for decoding rows of a repacked weight. */
  private rowBuf: Uint8Array | null = null;

  /**
   * `expand`: dequantize the whole tensor to float32 now (fast, for small models). The bytes are read once,
   * into where they stay: the arena for the wasm path (a file read lands there directly), an array of exactly
   * the tensor's size on the TS path; an expanded weight is decoded chunk by chunk, so its packed bytes never
   * exist in full alongside the f32 copy.
   */
  constructor(name: string, t: ModelTensor, expand = false) {
    if (t.dims.length !== 2) throw new ShapeError(`tensor '${name}': expected a matrix, dims [${t.dims.join(', ')}]`);
    this.name = name;
    this.type = t.type;
    this.cols = t.dims[0]!;
    this.rows = t.dims[1]!;
    const gt = ggmlType(t.type);
    if (!gt) throw new FileFormatError('gguf', `tensor '${name}': unknown ggml type ${t.type}`);
    this.blockValues = gt.blockValues;
    this.blockBytes = gt.blockBytes;
    this.rowBytes = (this.cols / gt.blockValues) * gt.blockBytes;
    const nbytes = tensorBytes(t);
    if (nbytes !== this.rowBytes * this.rows) {
      throw new ShapeError(`tensor '${name}': ${nbytes} B for [${this.rows}, ${this.cols}] ${gt.name} (want ${this.rowBytes * this.rows})`);
    }
    this.decode = t.type === GGML.F32 ? null : blockDecoder(name, t.type);
    const toF32 = t.type === GGML.F32 || expand;
    if (wasmMatmulSupports(t.type)) {
      // Into the arena: expanded weights as f32, the rest in their packed bytes (read in place by the kernels).
      const { ptr, view, space } = allocWeight(name, toF32 ? this.rows * this.cols * 4 : nbytes);
      const type = toF32 ? GGML.F32 : t.type;
      this.packed = { name, space, type, ptr, rowBytes: toF32 ? this.cols * 4 : this.rowBytes, rows: this.rows, cols: this.cols };
      this.f32 = toF32 ? new Float32Array(view.buffer, view.byteOffset, this.rows * this.cols) : null;
      this.data = toF32 ? null : view;
      this.fill(t, nbytes);
      // Into the kernels' interleaved layout where the build has one (q4_0 -> q4_0x4, q4_K -> q4_Kx4); decodeRows reads either.
      if (!toF32) this.packed = repackInArena(this.packed) ?? this.packed;
      if (type === GGML.F16 && arenaHalfNonFinite(ptr, this.rows * this.cols, space) > 0) {
        // The f16 kernels turn Inf/NaN into large finite values: keep such a weight exact as f32 instead.
        const f = allocWeight(name, this.rows * this.cols * 4);
        this.f32 = new Float32Array(f.view.buffer, f.view.byteOffset, this.rows * this.cols);
        this.expandFrom({ type: t.type, dims: t.dims, data: new Uint8Array(space.arena.memory.buffer, ptr, nbytes) });
        freeInArena(ptr, space);
        this.data = null;
        this.packed = { ...this.packed, space: f.space, type: GGML.F32, ptr: f.ptr, rowBytes: this.cols * 4 };
      }
    } else if (!t.readInto && !toF32) {
      // TS path, tensor already in memory: used as it is.
      this.f32 = null;
      this.data = t.data;
    } else if (!t.readInto && t.type === GGML.F32 && t.data.byteOffset % 4 === 0) {
      this.f32 = new Float32Array(t.data.buffer, t.data.byteOffset, nbytes / 4);
      this.data = null;
    } else {
      this.f32 = toF32 ? new Float32Array(this.rows * this.cols) : null;
      this.data = toF32 ? null : new Uint8Array(nbytes);
      this.fill(t, nbytes);
    }
  }

  /** Reads the tensor once into this.f32 (f32, or decoded when expanding) or this.data (packed). */
  private fill(t: ModelTensor, nbytes: number): void {
    if (t.type === GGML.F32) readTensor(t, new Uint8Array(this.f32!.buffer, this.f32!.byteOffset, nbytes));
    else if (this.f32) this.expandFrom(t);
    else readTensor(t, this.data!);
  }

  /** Decodes the tensor into this.f32, EXPAND_CHUNK_BYTES of packed rows at a time. */
  private expandFrom(t: ModelTensor): void {
    const chunkRows = Math.max(1, Math.floor(EXPAND_CHUNK_BYTES / this.rowBytes));
    const buf = new Uint8Array(Math.min(this.rows, chunkRows) * this.rowBytes);
    const blocksPerRow = this.cols / this.blockValues;
    for (let r0 = 0; r0 < this.rows; r0 += chunkRows) {
      const nr = Math.min(chunkRows, this.rows - r0);
      const packed = buf.subarray(0, nr * this.rowBytes);
      readTensor(t, packed, r0 * this.rowBytes);
      for (let r = 0; r < nr; r++) {
        for (let b = 0; b < blocksPerRow; b++)
          this.decode!(packed, r * this.rowBytes + b * this.blockBytes, this.f32!, (r0 + r) * this.cols + b * this.blockValues);
      }
    }
  }

  /** Bytes held in memory for this weight. */
  get nbytes(): number {
    return this.f32 ? this.f32.byteLength : this.data!.byteLength;
  }

  /** Rows [r0, r1) as float32 into dst [r1 - r0, cols]. */
  decodeRows(r0: number, r1: number, dst: Float32Array, dstOff = 0): void {
    if (this.f32) {
      dst.set(this.f32.subarray(r0 * this.cols, r1 * this.cols), dstOff);
      return;
    }
    const decode = this.decode!;
    const blocksPerRow = this.cols / this.blockValues;
    // A repacked weight (q4_0x4, q4_Kx4): each row back to its file bytes first (interleave.ts).
    const grouped = this.packed ? interleavedLayout(this.packed.type) : undefined;
    const row = grouped ? (this.rowBuf ??= new Uint8Array(this.rowBytes)) : this.data!;
    for (let r = r0; r < r1; r++) {
      if (grouped) groupedRow(grouped, this.data!, this.rowBytes, r, row);
      const so = grouped ? 0 : r * this.rowBytes;
      const doff = dstOff + (r - r0) * this.cols;
      for (let b = 0; b < blocksPerRow; b++) decode(row, so + b * this.blockBytes, dst, doff + b * this.blockValues);
    }
  }

  /** True when matmul runs in the wasm kernels. */
  get inWasm(): boolean {
    return this.packed !== null;
  }

  /** y [n, rows] = x [n, cols] . W^T (+ bias [rows]). */
  matmul(x: Float32Array, n: number, y: Float32Array, bias?: Float32Array): void {
    const { rows, cols } = this;
    if (x.length < n * cols || y.length < n * rows)
      throw new ShapeError(`${this.name}: matmul x ${x.length} / y ${y.length} too short for ${n} x [${rows}, ${cols}]`);
    if (this.packed) wasmMatmul(this.packed, x, n, y);
    else this.matmulRef(x, n, y);
    if (bias) addRows(y, bias, n, rows);
  }

  /** The plain TS matmul (the reference the wasm path is tested against), without bias. */
  matmulRef(x: Float32Array, n: number, y: Float32Array): void {
    const { rows, cols } = this;
    if (x.length < n * cols || y.length < n * rows)
      throw new ShapeError(`${this.name}: matmul x ${x.length} / y ${y.length} too short for ${n} x [${rows}, ${cols}]`);
    if (this.f32) {
      dotRows(this.f32, 0, rows, cols, x, n, y, rows, 0);
    } else {
      const block = Math.max(1, Math.floor(ROW_BLOCK_VALUES / cols));
      if (!this.scratch) this.scratch = new Float32Array(block * cols);
      for (let r0 = 0; r0 < rows; r0 += block) {
        const r1 = Math.min(rows, r0 + block);
        this.decodeRows(r0, r1, this.scratch);
        dotRows(this.scratch, 0, r1 - r0, cols, x, n, y, rows, r0);
      }
    }
  }

  /** The packed weight in the arena (null on the TS path): for the wasm parity test. */
  get packedWeight(): PackedWeight | null {
    return this.packed;
  }
}

/**
 * ys[i] [n, ws[i].rows] = x [n, cols] . ws[i]^T (+ biases[i]) for weights that read the same input (q/k/v,
 * gate/up): on the wasm path the activations are copied, quantized and tiled once for the whole group.
 */
export function matmulShared(
  ws: readonly Weight[],
  x: Float32Array,
  n: number,
  ys: readonly Float32Array[],
  biases?: readonly (Float32Array | undefined)[],
): void {
  if (ws.length !== ys.length) throw new ShapeError(`matmulShared: ${ws.length} weights, ${ys.length} outputs`);
  const packs = ws.map((w) => w.packedWeight);
  if (packs.every((p) => p !== null) && ws.every((w) => w.cols === ws[0]!.cols)) {
    ws.forEach((w, i) => {
      if (x.length < n * w.cols || ys[i]!.length < n * w.rows)
        throw new ShapeError(`${w.name}: matmul x ${x.length} / y ${ys[i]!.length} too short for ${n} x [${w.rows}, ${w.cols}]`);
    });
    wasmMatmulGroup(packs as PackedWeight[], x, n, ys);
    ws.forEach((w, i) => {
      const b = biases?.[i];
      if (b) addRows(ys[i]!, b, n, w.rows);
    });
    return;
  }
  ws.forEach((w, i) => w.matmul(x, n, ys[i]!, biases?.[i]));
}

/**
 * y[t, yCol + r] = w[r] . x[t] for r < nr rows of length cols. Every token is summed in one order (four
 * partial sums over columns c % 4, the last cols % 4 into the first, then s0 + s1 + s2 + s3), so a token's
 * output has the same bits in a batch of any size; four tokens share each weight load (prefill).
 */
function dotRows(w: Float32Array, wOff: number, nr: number, cols: number, x: Float32Array, n: number, y: Float32Array, yStride: number, yCol: number): void {
  const c4 = cols & ~3;
  const n4 = n & ~3;
  for (let r = 0; r < nr; r++) {
    const wo = wOff + r * cols;
    for (let t = 0; t < n4; t += 4) {
      const x0 = t * cols,
        x1 = x0 + cols,
        x2 = x1 + cols,
        x3 = x2 + cols;
      let a0 = 0,
        a1 = 0,
        a2 = 0,
        a3 = 0,
        b0 = 0,
        b1 = 0,
        b2 = 0,
        b3 = 0;
      let c0 = 0,
        c1 = 0,
        c2 = 0,
        c3 = 0,
        d0 = 0,
        d1 = 0,
        d2 = 0,
        d3 = 0;
      let c = 0;
      for (; c < c4; c += 4) {
        const w0 = w[wo + c]!,
          w1 = w[wo + c + 1]!,
          w2 = w[wo + c + 2]!,
          w3 = w[wo + c + 3]!;
        a0 += w0 * x[x0 + c]!;
        a1 += w1 * x[x0 + c + 1]!;
        a2 += w2 * x[x0 + c + 2]!;
        a3 += w3 * x[x0 + c + 3]!;
        b0 += w0 * x[x1 + c]!;
        b1 += w1 * x[x1 + c + 1]!;
        b2 += w2 * x[x1 + c + 2]!;
        b3 += w3 * x[x1 + c + 3]!;
        c0 += w0 * x[x2 + c]!;
        c1 += w1 * x[x2 + c + 1]!;
        c2 += w2 * x[x2 + c + 2]!;
        c3 += w3 * x[x2 + c + 3]!;
        d0 += w0 * x[x3 + c]!;
        d1 += w1 * x[x3 + c + 1]!;
        d2 += w2 * x[x3 + c + 2]!;
        d3 += w3 * x[x3 + c + 3]!;
      }
      for (; c < cols; c++) {
        const wc = w[wo + c]!;
        a0 += wc * x[x0 + c]!;
        b0 += wc * x[x1 + c]!;
        c0 += wc * x[x2 + c]!;
        d0 += wc * x[x3 + c]!;
      }
      const yo = t * yStride + yCol + r;
      y[yo] = a0 + a1 + a2 + a3;
      y[yo + yStride] = b0 + b1 + b2 + b3;
      y[yo + 2 * yStride] = c0 + c1 + c2 + c3;
      y[yo + 3 * yStride] = d0 + d1 + d2 + d3;
    }
    for (let t = n4; t < n; t++) {
      const xo = t * cols;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0;
      let c = 0;
      for (; c < c4; c += 4) {
        s0 += w[wo + c]! * x[xo + c]!;
        s1 += w[wo + c + 1]! * x[xo + c + 1]!;
        s2 += w[wo + c + 2]! * x[xo + c + 2]!;
        s3 += w[wo + c + 3]! * x[xo + c + 3]!;
      }
      for (; c < cols; c++) s0 += w[wo + c]! * x[xo + c]!;
      y[t * yStride + yCol + r] = s0 + s1 + s2 + s3;
    }
  }
}

/**
 * A 1-D tensor (norm weights, biases) as float32 (f32 tensors read straight into the result). With the wasm
 * kernels it lives in the arena, where the forward ops read it in place.
 */
export function vectorF32(name: string, t: ModelTensor, length: number): Float32Array {
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (n !== length) throw new ShapeError(`tensor '${name}': ${n} values, expected ${length}`);
  const out = arenaVector(name, n) ?? new Float32Array(n);
  if (t.type === GGML.F32) {
    readTensor(t, new Uint8Array(out.buffer, out.byteOffset, n * 4));
    return out;
  }
  const gt = ggmlType(t.type);
  if (!gt) throw new FileFormatError('gguf', `tensor '${name}': unknown ggml type ${t.type}`);
  const decode = blockDecoder(name, t.type);
  const data = t.data;
  for (let b = 0; b < n / gt.blockValues; b++) decode(data, b * gt.blockBytes, out, b * gt.blockValues);
  return out;
}
