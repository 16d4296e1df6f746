// Chunk values: the byte parts of every layer of one cache chunk, as one buffer (local or remote stores).
import { FileFormatError } from '../errors.js';

/** [layer][part] byte arrays; every layer has the same number of parts. */
export type ChunkLayers = readonly (readonly Uint8Array[])[];

/** Layout: "KVCK" | u16 version | u16 parts per layer | u32 layers | u32 length per (layer, part) | bytes in that order. */
const MAGIC = Buffer.from('KVCK', 'latin1');
export const CHUNK_CODEC_VERSION = 1;
const FIXED = 12;
/** More layers than any model has: a count beyond it is a corrupt header, not a model. */
const MAX_LAYERS = 1 << 12;
const MAX_PARTS = 64;

function bad(message: string): never {
  throw new FileFormatError('kv chunk', message);
}

export function encodeChunk(layers: ChunkLayers): Buffer {
  const parts = layers[0]?.length ?? 0;
  if (layers.length > MAX_LAYERS) bad(`${layers.length} layers exceed ${MAX_LAYERS}`);
  if (parts > MAX_PARTS) bad(`${parts} parts per layer exceed ${MAX_PARTS}`);
  layers.forEach((l, i) => {
    if (l.length !== parts) bad(`layer ${i} has ${l.length} parts, layer 0 has ${parts}`);
  });
  const head = Buffer.alloc(FIXED + 4 * layers.length * parts);
  MAGIC.copy(head, 0);
  head.writeUInt16LE(CHUNK_CODEC_VERSION, 4);
  head.writeUInt16LE(parts, 6);
  head.writeUInt32LE(layers.length, 8);
  let o = FIXED;
  for (const l of layers) for (const p of l) o = head.writeUInt32LE(p.length, o);
  return Buffer.concat([head, ...layers.flat()]);
}

/** Parses and validates a chunk value; the parts are views into `buf` (copy them to keep them). */
export function decodeChunk(buf: Uint8Array): Uint8Array[][] {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.length < FIXED) bad(`truncated (${b.length} bytes)`);
  if (!b.subarray(0, 4).equals(MAGIC)) bad('not a kvpack chunk (bad magic)');
  const version = b.readUInt16LE(4);
  if (version !== CHUNK_CODEC_VERSION) bad(`version ${version}; this kvpack reads version ${CHUNK_CODEC_VERSION}`);
  const parts = b.readUInt16LE(6);
  const count = b.readUInt32LE(8);
  if (parts > MAX_PARTS) bad(`${parts} parts per layer exceed ${MAX_PARTS}`);
  if (count > MAX_LAYERS) bad(`${count} layers exceed ${MAX_LAYERS}`);
  const tableEnd = FIXED + 4 * count * parts;
  if (tableEnd > b.length) bad(`truncated (length table of ${count} x ${parts} does not fit in ${b.length} bytes)`);
  let total = tableEnd;
  for (let o = FIXED; o < tableEnd; o += 4) total += b.readUInt32LE(o);
  if (total !== b.length) bad(`lengths add up to ${total} bytes, the chunk has ${b.length}`);
  const out: Uint8Array[][] = [];
  let at = tableEnd;
  let o = FIXED;
  for (let i = 0; i < count; i++) {
    const layer: Uint8Array[] = [];
    for (let j = 0; j < parts; j++, o += 4) {
      const n = b.readUInt32LE(o);
      layer.push(b.subarray(at, at + n));
      at += n;
    }
    out.push(layer);
  }
  return out;
}
