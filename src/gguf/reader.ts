// GGUF v2/v3 reader (ggml docs/gguf.md), hardened: every count, length and offset is checked against a
// named limit and against the bytes the file really has before anything is looped over or allocated.
//
// Memory: the header is parsed through positioned reads of HEADER_CHUNK_BYTES; tensor data is not read
// until `tensorData(name)` is called, which returns one fresh Uint8Array of exactly that tensor (a view,
// for in-memory sources), or `readTensorInto(name, dst)`, which reads straight into the caller's memory
// (the engine's wasm arena). The reader keeps no copy, so a loader holds the weights once, and no tensor
// is limited by Node's maximum Buffer size for the whole file.
import { ArgumentError } from '../errors.js';
import { Cursor } from './cursor.js';
import {
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_VERSIONS,
  MAX_ALIGNMENT,
  MAX_ARRAY_LENGTH,
  MAX_DIM,
  MAX_DIMS,
  MAX_KV,
  MAX_STRING_BYTES,
  MAX_TENSOR_NAME_BYTES,
  MAX_TENSORS,
} from './limits.js';
import * as md from './metadata.js';
import { fileSource, memorySource, readInto, type ByteSource } from './source.js';
import { ggmlType, ggmlTypeName } from './types.js';
import { GGUF_ITEM_BYTES, ggufTypeName, type GgufArray, type GgufArrayItems, type GgufItemType, type GgufValue } from './values.js';

export interface GgufTensorInfo {
  readonly name: string;
  /** ggml order: dims[0] = ne0, the contiguous (row) dimension. */
  readonly dims: readonly number[];
  /** ggml type id (see types.ts). */
  readonly type: number;
  /** Absolute byte offset of the data in the file (data section start + the stored relative offset). */
  readonly offset: number;
  /** Data size: (ne0 / block values) x block bytes x ne1 x ne2 x ne3. */
  readonly bytes: number;
  /** Number of values (product of dims). */
  readonly elements: number;
}

export interface GgufFile {
  readonly source: string;
  readonly version: number;
  readonly alignment: number;
  /** Absolute offset of the tensor data section (header end, padded to `alignment`). */
  readonly dataStart: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorInfo[];
  tensor(name: string): GgufTensorInfo;
  /** The tensor's bytes: a fresh array from a file, a view from memory. Not cached. */
  tensorData(name: string): Uint8Array;
  /** Reads dst.length bytes of the tensor, from byte `at` of its data, into dst; allocates nothing that size. */
  readTensorInto(name: string, dst: Uint8Array, at?: number): void;
  getU32(key: string, fallback?: number): number;
  getF32(key: string, fallback?: number): number;
  getString(key: string, fallback?: string): string;
  getInt(key: string, fallback?: number): number;
  getArray<K extends GgufItemType>(key: string, itemType: K): GgufArrayItems[K];
}

/** Smallest encoded tensor info: name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8). */
const MIN_TENSOR_INFO_BYTES = 32;
/** Smallest encoded key/value: key length (8) + value type (4) + a 1-byte value. */
const MIN_KV_BYTES = 13;
/** Smallest encoded string item of an array: its 8-byte length. */
const MIN_STRING_BYTES = 8;

const utf8 = new TextEncoder();

/** Reads a GGUF file's header; tensor data is read on demand by `tensorData`. */
export function readGguf(path: string): GgufFile {
  return readGgufFrom(fileSource(path));
}

/** Parses GGUF bytes already in memory (tensorData returns views into `bytes`). */
export function parseGguf(bytes: Uint8Array, name = '<memory>'): GgufFile {
  return readGgufFrom(memorySource(bytes, name));
}

/** True when the source starts with the GGUF magic (how model loaders tell GGUF from other files). */
export function hasGgufMagic(src: ByteSource): boolean {
  if (src.size < 4) return false;
  const b = src.read(0, 4);
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true) === GGUF_MAGIC;
}

export function readGgufFrom(src: ByteSource): GgufFile {
  const c = new Cursor(src, 'gguf');
  const magic = c.u32('magic');
  if (magic !== GGUF_MAGIC) throw c.fail(`bad magic 0x${magic.toString(16).padStart(8, '0')} (not a GGUF file)`);
  const version = readVersion(c);

  const tensorCount = count(c, c.u64('tensor count'), MAX_TENSORS, 'MAX_TENSORS', 'tensor count', MIN_TENSOR_INFO_BYTES);
  const kvCount = count(c, c.u64('metadata kv count'), MAX_KV, 'MAX_KV', 'metadata kv count', MIN_KV_BYTES);

  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = readString(c, `metadata key #${i}`);
    if (metadata.has(key)) throw c.fail(`duplicate metadata key '${key}'`);
    metadata.set(key, readValue(c, key));
  }
  const alignment = readAlignment(c, metadata);

  const infos: { name: string; dims: number[]; type: number; rel: bigint }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = readString(c, `tensor #${i} name`);
    if (utf8.encode(name).length > MAX_TENSOR_NAME_BYTES) {
      throw c.fail(`tensor #${i} name '${name.slice(0, 80)}' is longer than MAX_TENSOR_NAME_BYTES = ${MAX_TENSOR_NAME_BYTES}`);
    }
    if (names.has(name)) throw c.fail(`duplicate tensor name '${name}'`);
    names.add(name);
    const nDims = c.u32(`tensor '${name}' n_dims`);
    if (nDims < 1 || nDims > MAX_DIMS) throw c.fail(`tensor '${name}' has ${nDims} dims (allowed 1..MAX_DIMS = ${MAX_DIMS})`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) {
      const ne = c.u64(`tensor '${name}' dim ${d}`);
      if (ne > BigInt(MAX_DIM)) throw c.fail(`tensor '${name}' dim ${d} = ${ne} exceeds MAX_DIM = ${MAX_DIM}`);
      dims.push(Number(ne));
    }
    const type = c.u32(`tensor '${name}' type`);
    const rel = c.u64(`tensor '${name}' offset`);
    infos.push({ name, dims, type, rel });
  }

  const dataStart = alignUp(c.pos, alignment);
  const tensors = infos.map((t) => placeTensor(c, t, alignment, dataStart));
  checkOverlaps(c, tensors);
  return makeFile(src, version, alignment, dataStart, metadata, tensors);
}

function readVersion(c: Cursor): number {
  const version = c.u32('version');
  if (GGUF_VERSIONS.includes(version)) return version;
  // A big-endian file stores the version byte-swapped (v3 added BE files: 0x03000000 read as LE).
  if (version > 0xffff && (version & 0xffff) === 0) throw c.fail(`big-endian GGUF (version ${version >>> 24}) is not supported`);
  if (version === 1) throw c.fail('GGUF v1 (32-bit counts) is not supported; re-convert the model with a current llama.cpp');
  throw c.fail(`unsupported GGUF version ${version} (supported: ${GGUF_VERSIONS.join(', ')})`);
}

/** A u64 count as a number, refused above `limit` or when `count x minBytes` cannot fit in the file. */
function count(c: Cursor, v: bigint, limit: number, limitName: string, what: string, minBytes: number): number {
  if (v > BigInt(limit)) throw c.fail(`${what} ${v} exceeds ${limitName} = ${limit}`);
  const n = Number(v);
  if (n * minBytes > c.remaining) {
    throw c.fail(`truncated: ${what} ${n} needs at least ${n * minBytes} B, only ${c.remaining} B remain`);
  }
  return n;
}

function readString(c: Cursor, what: string): string {
  const len = c.u64(`${what} length`);
  if (len > BigInt(MAX_STRING_BYTES)) throw c.fail(`${what} length ${len} exceeds MAX_STRING_BYTES = ${MAX_STRING_BYTES}`);
  return c.text(Number(len), what);
}

function readValue(c: Cursor, key: string): GgufValue {
  const wire = c.u32(`metadata '${key}' type`);
  const type = ggufTypeName(wire);
  if (type === undefined) throw c.fail(`metadata '${key}' has unknown value type ${wire}`);
  if (type !== 'array') return readScalar(c, type, key);
  const itemWire = c.u32(`metadata '${key}' array item type`);
  const itemType = ggufTypeName(itemWire);
  if (itemType === undefined) throw c.fail(`metadata '${key}' array has unknown item type ${itemWire}`);
  if (itemType === 'array') throw c.fail(`metadata '${key}': nested arrays are not supported`);
  const minBytes = itemType === 'string' ? MIN_STRING_BYTES : GGUF_ITEM_BYTES[itemType];
  const n = count(c, c.u64(`metadata '${key}' array length`), MAX_ARRAY_LENGTH, 'MAX_ARRAY_LENGTH', `metadata '${key}' array length`, minBytes);
  return readArray(c, itemType, n, key);
}

function readScalar(c: Cursor, type: Exclude<GgufValue['type'], 'array'>, key: string): GgufValue {
  const what = `metadata '${key}' value`;
  if (type === 'string') return { type, value: readString(c, what) };
  const dv = c.span(GGUF_ITEM_BYTES[type], what);
  switch (type) {
    case 'u8':
      return { type, value: dv.getUint8(0) };
    case 'i8':
      return { type, value: dv.getInt8(0) };
    case 'u16':
      return { type, value: dv.getUint16(0, true) };
    case 'i16':
      return { type, value: dv.getInt16(0, true) };
    case 'u32':
      return { type, value: dv.getUint32(0, true) };
    case 'i32':
      return { type, value: dv.getInt32(0, true) };
    case 'f32':
      return { type, value: dv.getFloat32(0, true) };
    case 'f64':
      return { type, value: dv.getFloat64(0, true) };
    case 'u64':
      return { type, value: dv.getBigUint64(0, true) };
    case 'i64':
      return { type, value: dv.getBigInt64(0, true) };
    case 'bool':
      return { type, value: readBool(c, dv.getUint8(0), key) };
  }
}

function readBool(c: Cursor, b: number, key: string): boolean {
  if (b > 1) throw c.fail(`metadata '${key}': bool byte ${b} is neither 0 nor 1`);
  return b === 1;
}

function readArray(c: Cursor, itemType: GgufItemType, n: number, key: string): GgufArray {
  const what = `metadata '${key}' array`;
  if (itemType === 'string') {
    const value: string[] = new Array(n);
    for (let i = 0; i < n; i++) value[i] = readString(c, `${what} item ${i}`);
    return { type: 'array', itemType, value };
  }
  const size = GGUF_ITEM_BYTES[itemType];
  const dv = c.span(n * size, what);
  const le = true;
  switch (itemType) {
    case 'u8':
      return { type: 'array', itemType, value: Uint8Array.from({ length: n }, (_, i) => dv.getUint8(i)) };
    case 'i8':
      return { type: 'array', itemType, value: Int8Array.from({ length: n }, (_, i) => dv.getInt8(i)) };
    case 'u16':
      return { type: 'array', itemType, value: Uint16Array.from({ length: n }, (_, i) => dv.getUint16(i * 2, le)) };
    case 'i16':
      return { type: 'array', itemType, value: Int16Array.from({ length: n }, (_, i) => dv.getInt16(i * 2, le)) };
    case 'u32':
      return { type: 'array', itemType, value: Uint32Array.from({ length: n }, (_, i) => dv.getUint32(i * 4, le)) };
    case 'i32':
      return { type: 'array', itemType, value: Int32Array.from({ length: n }, (_, i) => dv.getInt32(i * 4, le)) };
    case 'f32':
      return { type: 'array', itemType, value: Float32Array.from({ length: n }, (_, i) => dv.getFloat32(i * 4, le)) };
    case 'f64':
      return { type: 'array', itemType, value: Float64Array.from({ length: n }, (_, i) => dv.getFloat64(i * 8, le)) };
    case 'u64':
      return { type: 'array', itemType, value: BigUint64Array.from({ length: n }, (_, i) => dv.getBigUint64(i * 8, le)) };
    case 'i64':
      return { type: 'array', itemType, value: BigInt64Array.from({ length: n }, (_, i) => dv.getBigInt64(i * 8, le)) };
    case 'bool':
      return { type: 'array', itemType, value: Array.from({ length: n }, (_, i) => readBool(c, dv.getUint8(i), key)) };
  }
}

function readAlignment(c: Cursor, metadata: Map<string, GgufValue>): number {
  const v = metadata.get('general.alignment');
  if (v === undefined) return GGUF_DEFAULT_ALIGNMENT;
  if (v.type !== 'u32') throw c.fail(`general.alignment must be u32, found ${v.type}`);
  const a = v.value;
  if (a === 0 || (a & (a - 1)) !== 0 || a > MAX_ALIGNMENT) {
    throw c.fail(`general.alignment ${a} is not a power of two in 1..MAX_ALIGNMENT = ${MAX_ALIGNMENT}`);
  }
  return a;
}

function alignUp(x: number, a: number): number {
  return Math.ceil(x / a) * a;
}

/** Checks type, shape and data range of one tensor; sizes in BigInt so absurd shapes cannot overflow. */
function placeTensor(c: Cursor, t: { name: string; dims: number[]; type: number; rel: bigint }, alignment: number, dataStart: number): GgufTensorInfo {
  const type = ggmlType(t.type);
  if (!type) throw c.fail(`tensor '${t.name}' has unknown or removed ggml type ${t.type}`);
  const ne0 = t.dims[0]!;
  if (ne0 % type.blockValues !== 0) {
    throw c.fail(`tensor '${t.name}' (${ggmlTypeName(t.type)}) ne0 = ${ne0} is not a multiple of its block size ${type.blockValues}`);
  }
  let bytes = BigInt(ne0 / type.blockValues) * BigInt(type.blockBytes);
  let elements = 1n;
  for (const d of t.dims) elements *= BigInt(d);
  for (const d of t.dims.slice(1)) bytes *= BigInt(d);
  if (t.rel % BigInt(alignment) !== 0n) throw c.fail(`tensor '${t.name}' offset ${t.rel} is not a multiple of the alignment ${alignment}`);
  const end = BigInt(dataStart) + t.rel + bytes;
  if (end > BigInt(c.src.size)) {
    throw c.fail(
      `tensor '${t.name}' [${t.dims.join(', ')}] ${ggmlTypeName(t.type)} needs ${bytes} B at data offset ${t.rel}, ` +
        `ending at ${end}, past the end of the file (${c.src.size} B): truncated or corrupt`,
    );
  }
  return Object.freeze({
    name: t.name,
    dims: Object.freeze(t.dims),
    type: t.type,
    offset: dataStart + Number(t.rel),
    bytes: Number(bytes),
    elements: Number(elements),
  });
}

function checkOverlaps(c: Cursor, tensors: readonly GgufTensorInfo[]): void {
  const sorted = [...tensors].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (a.offset + a.bytes > b.offset) {
      throw c.fail(`tensors '${a.name}' [${a.offset}, ${a.offset + a.bytes}) and '${b.name}' [${b.offset}, ...) overlap`);
    }
  }
}

function makeFile(
  src: ByteSource,
  version: number,
  alignment: number,
  dataStart: number,
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly GgufTensorInfo[],
): GgufFile {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const tensor = (name: string): GgufTensorInfo => {
    const t = byName.get(name);
    if (!t) throw new ArgumentError(`${src.name}: no tensor named '${name}' (${tensors.length} tensors)`);
    return t;
  };
  return Object.freeze({
    source: src.name,
    version,
    alignment,
    dataStart,
    metadata,
    tensors: Object.freeze([...tensors]),
    tensor,
    tensorData: (name: string) => {
      const t = tensor(name);
      return src.read(t.offset, t.bytes);
    },
    readTensorInto: (name: string, dst: Uint8Array, at = 0) => {
      const t = tensor(name);
      if (!Number.isSafeInteger(at) || at < 0 || at + dst.length > t.bytes) {
        throw new ArgumentError(`${src.name}: read of ${dst.length} B at ${at} is outside tensor '${name}' (${t.bytes} B)`);
      }
      readInto(src, t.offset + at, dst);
    },
    getU32: (key: string, fallback?: number) => md.getU32(metadata, key, fallback),
    getF32: (key: string, fallback?: number) => md.getF32(metadata, key, fallback),
    getString: (key: string, fallback?: string) => md.getString(metadata, key, fallback),
    getInt: (key: string, fallback?: number) => md.getInt(metadata, key, fallback),
    getArray: <K extends GgufItemType>(key: string, itemType: K) => md.getArray(metadata, key, itemType),
  });
}
