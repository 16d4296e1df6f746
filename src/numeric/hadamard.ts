// Randomized Hadamard rotation within a head: y = H(s * x) / sqrt(b) on power-of-two blocks of b values.
import { Prng } from './prng.js';

/** Largest power of two dividing n (the rotation block; head dims like 96 use blocks of 32). */
export function hadamardBlock(n: number): number {
  return n & -n;
}

/** In-place fast Walsh-Hadamard transform of x[off .. off+b), unnormalized. */
function fwht(x: Float32Array, off: number, b: number): void {
  for (let h = 1; h < b; h <<= 1) {
    for (let i = 0; i < b; i += h << 1) {
      for (let j = i; j < i + h; j++) {
        const a = x[off + j]!;
        const c = x[off + j + h]!;
        x[off + j] = a + c;
        x[off + j + h] = a - c;
      }
    }
  }
}

/** An orthonormal rotation of `dims`-vectors: seeded random signs, then blockwise Hadamard. */
export class Rotation {
  readonly dims: number;
  private readonly signs: Float32Array; // [dims] of +-1
  private readonly block: number;
  private readonly norm: number;

  constructor(dims: number, seed: number) {
    this.dims = dims;
    this.block = hadamardBlock(dims);
    this.norm = 1 / Math.sqrt(this.block);
    const rng = new Prng(seed);
    this.signs = new Float32Array(dims);
    for (let i = 0; i < dims; i++) this.signs[i] = rng.next() < 0.5 ? -1 : 1;
  }

  /** x[off..off+dims) <- R x. */
  apply(x: Float32Array, off: number): void {
    for (let i = 0; i < this.dims; i++) x[off + i] = x[off + i]! * this.signs[i]!;
    for (let b = 0; b < this.dims; b += this.block) fwht(x, off + b, this.block);
    for (let i = 0; i < this.dims; i++) x[off + i] = x[off + i]! * this.norm;
  }

  /** x[off..off+dims) <- R^T x (the inverse). */
  invert(x: Float32Array, off: number): void {
    for (let b = 0; b < this.dims; b += this.block) fwht(x, off + b, this.block);
    for (let i = 0; i < this.dims; i++) x[off + i] = x[off + i]! * this.norm * this.signs[i]!;
  }
}
