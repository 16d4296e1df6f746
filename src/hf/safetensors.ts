// safetensors reader (huggingface/safetensors format), hardened like the GGUF one: an 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets}, __metadata__?}, then the data section.
// Every length, shape and offset is checked against named limits and the file's real size before use;
// tensor bytes stay in the file (the loader reads each one straight to where it will live).
import { FileFormatError } from '../errors.js';
import { fileSource, type ByteSource } from '../gguf/source.js';
import { GGML } from '../gguf/types.js';

/** The u64 header length that starts every file. */
const LENGTH_BYTES = 8;
/** Guards the header allocation against a hostile length; the safetensors crate refuses the same (100 MB). */
export const MAX_HEADER_BYTES = 100_000_000;
/** Guards the shape loops; real checkpoints use at most 5 dims (conv weights). */
export const MAX_SHAPE_DIMS = 8;

/** Float dtypes kvpack reads and the ggml type holding the same bytes (the engine runs all three). */
export const SAFETENSORS_DTYPES = Object.freeze({
  F32: { bytes: 4, ggml: GGML.F32 },
  F16: { bytes: 2, ggml: GGML.F16 },
  BF16: { bytes: 2, ggml: GGML.BF16 },
} as const);
export type SafetensorsDtype = keyof typeof SAFETENSORS_DTYPES;

export interface SafetensorsTensor {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  /** Row-major, outermost first (a [out, in] matrix is [out, in]). */
  readonly shape: readonly number[];
  /** Absolute byte offset of the data in the file. */
  readonly offset: number;
  readonly nbytes: number;
  readonly source: ByteSource;
}

export interface SafetensorsFile {
  readonly name: string;
  /** Tensors in header order. */
  readonly tensors: ReadonlyMap<string, SafetensorsTensor>;
  /** The free-form `__metadata__` strings (e.g. format: pt). */
  readonly metadata: Readonly<Record<string, string>>;
}

export function readSafetensors(path: string): SafetensorsFile {
  return readSafetensorsFrom(fileSource(path));
}

export function readSafetensorsFrom(src: ByteSource): SafetensorsFile {
  const fail = (message: string) => new FileFormatError('safetensors', `${src.name}: ${message}`);
  if (src.size < LENGTH_BYTES) throw fail(`truncated: ${src.size} B is shorter than the ${LENGTH_BYTES} B header length`);
  const len = new DataView(src.read(0, LENGTH_BYTES).slice().buffer).getBigUint64(0, true);
  if (len > BigInt(MAX_HEADER_BYTES)) throw fail(`header length ${len} exceeds MAX_HEADER_BYTES (${MAX_HEADER_BYTES})`);
  const headerBytes = Number(len);
  if (LENGTH_BYTES + headerBytes > src.size) throw fail(`truncated: header of ${headerBytes} B runs past the end of the ${src.size} B file`);
  const dataStart = LENGTH_BYTES + headerBytes;
  const header = parseHeader(src.read(LENGTH_BYTES, headerBytes), fail);

  const tensors = new Map<string, SafetensorsTensor>();
  let metadata: Record<string, string> = {};
  const spans: [number, number, string][] = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = checkMetadata(entry, fail);
      continue;
    }
    const t = checkEntry(name, entry, src.size - dataStart, fail);
    spans.push([t.begin, t.end, name]);
    tensors.set(name, Object.freeze({ name, dtype: t.dtype, shape: t.shape, offset: dataStart + t.begin, nbytes: t.end - t.begin, source: src }));
  }
  // Two tensors sharing bytes would alias weights: a corrupt (or hand-edited) file.
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (let i = 1; i < spans.length; i++) {
    const [b, , n] = spans[i]!;
    const [, e, prev] = spans[i - 1]!;
    if (b < e) throw fail(`tensors '${prev}' and '${n}' overlap (data_offsets ${b} < ${e})`);
  }
  return { name: src.name, tensors, metadata: Object.freeze(metadata) };
}

function parseHeader(bytes: Uint8Array, fail: (m: string) => FileFormatError): Record<string, unknown> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw fail('header is not valid UTF-8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw fail(`header is not valid JSON (${(e as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw fail('header is not a JSON object');
  return json as Record<string, unknown>;
}

function checkMetadata(v: unknown, fail: (m: string) => FileFormatError): Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw fail('__metadata__ is not an object');
  for (const [k, x] of Object.entries(v)) if (typeof x !== 'string') throw fail(`__metadata__.${k} is not a string`);
  return { ...(v as Record<string, string>) };
}

interface Entry {
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

/** One tensor entry: known dtype, sane shape, offsets inside the data section and equal to shape x dtype size. */
function checkEntry(name: string, v: unknown, dataBytes: number, fail: (m: string) => FileFormatError): Entry {
  const bad = (m: string) => fail(`tensor '${name}': ${m}`);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('entry is not an object');
  const { dtype, shape, data_offsets: offs } = v as Record<string, unknown>;
  if (typeof dtype !== 'string') throw bad('dtype is missing');
  if (!Object.hasOwn(SAFETENSORS_DTYPES, dtype)) {
    throw bad(`dtype ${dtype.slice(0, 16)} is not supported (supported: ${Object.keys(SAFETENSORS_DTYPES).join(', ')})`);
  }
  const dt = dtype as SafetensorsDtype;
  if (!Array.isArray(shape) || shape.length > MAX_SHAPE_DIMS) throw bad(`shape must be an array of at most ${MAX_SHAPE_DIMS} dims`);
  let count = 1;
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || (d as number) < 0) throw bad(`shape [${shape.join(', ')}] holds a non-integer or negative dim`);
    count *= d as number;
    if (!Number.isSafeInteger(count * SAFETENSORS_DTYPES[dt].bytes)) throw bad(`shape [${shape.join(', ')}] is too large`);
  }
  if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((x) => Number.isSafeInteger(x) && x >= 0)) {
    throw bad('data_offsets must be [begin, end] of non-negative integers');
  }
  const [begin, end] = offs as [number, number];
  if (begin > end) throw bad(`data_offsets [${begin}, ${end}] end before they begin`);
  if (end > dataBytes) throw bad(`data_offsets [${begin}, ${end}] run past the ${dataBytes} B data section (truncated file?)`);
  const want = count * SAFETENSORS_DTYPES[dt].bytes;
  if (end - begin !== want) throw bad(`data_offsets hold ${end - begin} B, shape [${shape.join(', ')}] ${dt} needs ${want} B`);
  return { dtype: dt, shape: shape as number[], begin, end };
}
