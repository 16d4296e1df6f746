// Saved arrays are raw little-endian float32 (no header): shapes live in the protocol and index files.
import { FileFormatError } from '../errors.js';

/** Concatenates arrays as little-endian float32 bytes (explicit LE, whatever the host's endianness). */
export function f32Bytes(...parts: Float32Array[]): Uint8Array {
  const n = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(n * 4);
  const dv = new DataView(out.buffer);
  let o = 0;
  for (const p of parts) for (let i = 0; i < p.length; i++, o += 4) dv.setFloat32(o, p[i]!, true);
  return out;
}

/** Splits little-endian float32 bytes into arrays of the given lengths (which must use every byte). */
export function readF32(bytes: Uint8Array, ...lengths: number[]): Float32Array[] {
  const total = lengths.reduce((s, x) => s + x, 0);
  if (bytes.length !== total * 4) throw new FileFormatError('f32 array', `${bytes.length} bytes, expected ${total * 4}`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = 0;
  return lengths.map((n) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++, o += 4) a[i] = dv.getFloat32(o, true);
    return a;
  });
}

/** Exact element-wise equality (NaN never equal). */
export function sameF32(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
