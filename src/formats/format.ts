// The KvFormat contract: one object per packed format, carrying every fact about it.
import { DefinitionError, ShapeError } from '../errors.js';

/**
 * Grouping axis of a block.
 * - `token`: a block runs along the head dimension of one token (per-token scales; q8_0, q4_0, nf4...).
 * - `channel`: a block runs along `blockValues` consecutive tokens of one channel (per-channel scales; q2c_0).
 */
export type Axis = 'token' | 'channel';

/** One field of a block's byte layout, in storage order. */
export interface LayoutField {
  readonly name: string;
  readonly bytes: number;
  readonly what: string;
}

export interface KvFormat {
  /** Lowercase id; ggml names only where our bytes are identical to ggml's. */
  readonly id: string;
  /** One-line description for tables. */
  readonly description: string;
  readonly axis: Axis;
  /** Values per block (ggml's QK). */
  readonly blockValues: number;
  /** Bytes per block, scales and padding included. */
  readonly blockBytes: number;
  /** Byte layout of one block; a test checks the fields sum to `blockBytes`. */
  readonly layout: readonly LayoutField[];
  /** Element order inside the bytes and the rounding rule, stated once. */
  readonly rule: string;
  /** True for formats that store values without quantization error beyond a float type (f32/f16/bf16). */
  readonly exact: boolean;
  /** ggml type id when the bytes are identical to ggml's (GGUF tensor type / llama.cpp cache type). */
  readonly ggmlType?: number;
  /**
   * Largest |decoded - input| the format promises for the block at src[srcOff..] (half a step for uniform
   * grids, half the largest gap for codebooks). Absent when no per-value bound is promised (sign, tern).
   */
  errorBound?(src: Float32Array, srcOff: number): number;
  /** Reference encoder: exactly `blockValues` finite floats from src[srcOff..] into dst[dstOff..]. */
  encodeBlock(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number): void;
  /** Reference decoder: one block into dst[dstOff .. dstOff + blockValues]. Never throws on any bytes. */
  decodeBlock(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number): void;
}

/** Effective bits per stored value, from the definition (scales and block padding included). */
export function bitsPerValue(f: KvFormat): number {
  return (f.blockBytes * 8) / f.blockValues;
}

/** Blocks needed to hold `n` values along a block's axis (partial blocks are padded with zeros). */
export function blocksFor(f: KvFormat, n: number): number {
  return Math.ceil(n / f.blockValues);
}

/** Bytes of one token-axis row of `dims` values (padded to whole blocks). */
export function rowBytes(f: KvFormat, dims: number): number {
  return blocksFor(f, dims) * f.blockBytes;
}

/**
 * Bytes for `tokens` x `dims` values stored in this format: token-axis formats pad each row to whole
 * blocks; channel-axis formats pad the token count to whole groups of `blockValues`.
 */
export function bytesFor(f: KvFormat, tokens: number, dims: number): number {
  if (f.axis === 'token') return tokens * rowBytes(f, dims);
  return blocksFor(f, tokens) * dims * f.blockBytes;
}

/**
 * Most values one block holds: reference decoders write one block into a scratch buffer of this size
 * (blockScratch), so a longer block would be cut short. The longest today is int*_g128's 128.
 */
export const MAX_BLOCK_VALUES = 256;

/** A decode scratch buffer for one block of any format. */
export function blockScratch(): Float32Array {
  return new Float32Array(MAX_BLOCK_VALUES);
}

/** Throws ShapeError when `scratch` cannot take one block of f (a format built around defineFormat). */
export function checkScratch(f: KvFormat, scratch: Float32Array): void {
  if (scratch.length < f.blockValues)
    throw new ShapeError(
      `format ${f.id}: blocks of ${f.blockValues} values exceed the ${scratch.length}-value decode scratch (MAX_BLOCK_VALUES = ${MAX_BLOCK_VALUES})`,
    );
}

/** Helper for defining formats: checks the layout sums to the block size and bounds blockValues. */
export function defineFormat(f: KvFormat): KvFormat {
  if (!Number.isInteger(f.blockValues) || f.blockValues < 1 || f.blockValues > MAX_BLOCK_VALUES) {
    throw new DefinitionError(`format ${f.id}: blockValues ${f.blockValues} outside [1, ${MAX_BLOCK_VALUES}] (MAX_BLOCK_VALUES)`);
  }
  const sum = f.layout.reduce((s, x) => s + x.bytes, 0);
  if (sum !== f.blockBytes) throw new DefinitionError(`format ${f.id}: layout sums to ${sum} B, blockBytes is ${f.blockBytes}`);
  return Object.freeze(f);
}
