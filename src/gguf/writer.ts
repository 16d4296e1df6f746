// GGUF v3 writer (little-endian): header, metadata of every value type, tensor infos, then the tensor
// data each padded to the alignment. Tensors go in the order given, at consecutive aligned offsets,
// which is also the layout llama.cpp's own writer produces and its reader insists on.
import { closeSync, openSync, writeSync } from 'node:fs';
import { ArgumentError } from '../errors.js';
import { GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_ALIGNMENT, MAX_DIMS, MAX_TENSOR_NAME_BYTES } from './limits.js';
import { ggmlType, ggmlTypeName } from './types.js';
import { GGUF_TYPE, type GgufItemType, type GgufValue } from './values.js';

export interface GgufTensorInput {
  readonly name: string;
  /** ggml type id (types.ts GGML.*). */
  readonly type: number;
  /** ggml order, ne0 first. */
  readonly dims: readonly number[];
  /** Exactly the tensor's bytes ((ne0 / block) x block bytes x the other dims). */
  readonly data: Uint8Array;
  /**
   * The byte size, when `data` is a getter that reads the tensor (from its file): writeGguf then reads each
   * tensor only when writing it, so a conversion never holds all the weights at once.
   */
  readonly nbytes?: number;
}

export interface GgufWriteInput {
  readonly metadata: Iterable<readonly [string, GgufValue]>;
  readonly tensors: readonly GgufTensorInput[];
  /** Data alignment; written as general.alignment when it is not the default 32. */
  readonly alignment?: number;
}

const GGUF_WRITE_VERSION = 3;
const utf8 = new TextEncoder();

/** Growable little-endian byte buffer for the header (room() may replace `view`, so it runs first). */
class Bytes {
  buf = new Uint8Array(4096);
  view = new DataView(this.buf.buffer);
  len = 0;

  private room(n: number): number {
    if (this.len + n > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
      next.set(this.buf.subarray(0, this.len));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.len;
    this.len += n;
    return at;
  }
  u8(x: number): void {
    const at = this.room(1);
    this.view.setUint8(at, x);
  }
  i8(x: number): void {
    const at = this.room(1);
    this.view.setInt8(at, x);
  }
  u16(x: number): void {
    const at = this.room(2);
    this.view.setUint16(at, x, true);
  }
  i16(x: number): void {
    const at = this.room(2);
    this.view.setInt16(at, x, true);
  }
  u32(x: number): void {
    const at = this.room(4);
    this.view.setUint32(at, x, true);
  }
  i32(x: number): void {
    const at = this.room(4);
    this.view.setInt32(at, x, true);
  }
  f32(x: number): void {
    const at = this.room(4);
    this.view.setFloat32(at, x, true);
  }
  f64(x: number): void {
    const at = this.room(8);
    this.view.setFloat64(at, x, true);
  }
  u64(x: bigint): void {
    const at = this.room(8);
    this.view.setBigUint64(at, x, true);
  }
  i64(x: bigint): void {
    const at = this.room(8);
    this.view.setBigInt64(at, x, true);
  }
  raw(b: Uint8Array): void {
    const at = this.room(b.length);
    this.buf.set(b, at);
  }
  /** gguf_string_t: u64 byte length, then UTF-8 bytes without a NUL. */
  str(s: string): void {
    const b = utf8.encode(s);
    this.u64(BigInt(b.length));
    this.raw(b);
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

/** Integer range of each fixed-size number type, so an out-of-range value is an error, not a wrap. */
const INT_RANGE: Partial<Record<GgufItemType, readonly [number, number]>> = {
  u8: [0, 0xff],
  i8: [-0x80, 0x7f],
  u16: [0, 0xffff],
  i16: [-0x8000, 0x7fff],
  u32: [0, 0xffffffff],
  i32: [-0x80000000, 0x7fffffff],
};

function item(out: Bytes, type: GgufItemType, x: number | bigint | boolean | string, key: string): void {
  const range = INT_RANGE[type];
  if (range && (typeof x !== 'number' || !Number.isInteger(x) || x < range[0] || x > range[1])) {
    throw new ArgumentError(`gguf writer: metadata '${key}': ${String(x)} is not a ${type}`);
  }
  switch (type) {
    case 'u8':
      return out.u8(x as number);
    case 'i8':
      return out.i8(x as number);
    case 'u16':
      return out.u16(x as number);
    case 'i16':
      return out.i16(x as number);
    case 'u32':
      return out.u32(x as number);
    case 'i32':
      return out.i32(x as number);
    case 'f32':
      return out.f32(x as number);
    case 'f64':
      return out.f64(x as number);
    case 'u64':
      return out.u64(BigInt.asUintN(64, x as bigint));
    case 'i64':
      return out.i64(BigInt.asIntN(64, x as bigint));
    case 'bool':
      return out.u8(x ? 1 : 0);
    case 'string':
      return out.str(x as string);
  }
}

function value(out: Bytes, key: string, v: GgufValue): void {
  out.u32(GGUF_TYPE[v.type]);
  if (v.type !== 'array') return item(out, v.type, v.value, key);
  out.u32(GGUF_TYPE[v.itemType]);
  out.u64(BigInt(v.value.length));
  const items = v.value as ArrayLike<number | bigint | boolean | string>;
  for (let i = 0; i < items.length; i++) item(out, v.itemType, items[i]!, key);
}

interface Planned {
  header: Uint8Array;
  alignment: number;
  tensors: readonly GgufTensorInput[];
  /** Padded size of each tensor's data. */
  padded: number[];
  total: number;
}

function plan(input: GgufWriteInput): Planned {
  const alignment = input.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  if (!Number.isInteger(alignment) || alignment < 1 || (alignment & (alignment - 1)) !== 0 || alignment > MAX_ALIGNMENT) {
    throw new ArgumentError(`gguf writer: alignment ${alignment} is not a power of two in 1..${MAX_ALIGNMENT}`);
  }
  const kv = new Map<string, GgufValue>();
  for (const [k, v] of input.metadata) {
    if (kv.has(k)) throw new ArgumentError(`gguf writer: duplicate metadata key '${k}'`);
    kv.set(k, v);
  }
  const given = kv.get('general.alignment');
  if (given && (given.type !== 'u32' || given.value !== alignment)) {
    throw new ArgumentError(`gguf writer: general.alignment in metadata disagrees with alignment ${alignment}`);
  }
  if (!given && alignment !== GGUF_DEFAULT_ALIGNMENT) kv.set('general.alignment', { type: 'u32', value: alignment });

  const out = new Bytes();
  out.u32(GGUF_MAGIC);
  out.u32(GGUF_WRITE_VERSION);
  out.u64(BigInt(input.tensors.length));
  out.u64(BigInt(kv.size));
  for (const [k, v] of kv) {
    out.str(k);
    value(out, k, v);
  }
  const names = new Set<string>();
  const padded: number[] = [];
  let offset = 0;
  for (const t of input.tensors) {
    checkTensor(t, names);
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(BigInt(d));
    out.u32(t.type);
    out.u64(BigInt(offset));
    const size = Math.ceil(byteSize(t) / alignment) * alignment;
    padded.push(size);
    offset += size;
  }
  const headerLen = Math.ceil(out.len / alignment) * alignment;
  const header = new Uint8Array(headerLen);
  header.set(out.bytes());
  return { header, alignment, tensors: input.tensors, padded, total: headerLen + offset };
}

function checkTensor(t: GgufTensorInput, names: Set<string>): void {
  const where = `gguf writer: tensor '${t.name}'`;
  if (utf8.encode(t.name).length > MAX_TENSOR_NAME_BYTES) throw new ArgumentError(`${where}: name longer than ${MAX_TENSOR_NAME_BYTES} B`);
  if (names.has(t.name)) throw new ArgumentError(`${where}: duplicate name`);
  names.add(t.name);
  const type = ggmlType(t.type);
  if (!type) throw new ArgumentError(`${where}: unknown ggml type ${t.type}`);
  if (t.dims.length < 1 || t.dims.length > MAX_DIMS || t.dims.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw new ArgumentError(`${where}: bad dims [${t.dims.join(', ')}]`);
  }
  if (t.dims[0]! % type.blockValues !== 0) {
    throw new ArgumentError(`${where}: ne0 ${t.dims[0]} is not a multiple of the ${ggmlTypeName(t.type)} block size ${type.blockValues}`);
  }
  const bytes = t.dims.slice(1).reduce((s, d) => s * d, (t.dims[0]! / type.blockValues) * type.blockBytes);
  if (byteSize(t) !== bytes) throw new ArgumentError(`${where}: data is ${byteSize(t)} B, shape and type need ${bytes} B`);
}

const byteSize = (t: GgufTensorInput): number => t.nbytes ?? t.data.length;

/** The whole file in memory (tests, small models). */
export function encodeGguf(input: GgufWriteInput): Uint8Array {
  const p = plan(input);
  const out = new Uint8Array(p.total);
  out.set(p.header);
  let at = p.header.length;
  p.tensors.forEach((t, i) => {
    out.set(t.data, at);
    at += p.padded[i]!;
  });
  return out;
}

/** Writes the file piece by piece: the header, then each tensor and its padding (no whole-file copy). */
export function writeGguf(path: string, input: GgufWriteInput): void {
  const p = plan(input);
  const fd = openSync(path, 'w');
  try {
    writeAll(fd, p.header);
    const zeros = new Uint8Array(p.alignment);
    p.tensors.forEach((t, i) => {
      const data = t.data;
      if (data.length !== byteSize(t)) throw new ArgumentError(`gguf writer: tensor '${t.name}': data is ${data.length} B, nbytes said ${byteSize(t)}`);
      writeAll(fd, data);
      writeAll(fd, zeros.subarray(0, p.padded[i]! - data.length));
    });
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, b: Uint8Array): void {
  let done = 0;
  while (done < b.length) done += writeSync(fd, b, done, b.length - done);
}
