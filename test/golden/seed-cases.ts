// Inputs of the frozen seed-format golden vectors (scripts/gen-seed-golden.ts writes, seed.test.ts checks).
import { Prng } from '../../src/numeric/prng.js';

/** The non-ggml packed formats of issue 2 (seeds 000, 002, 003) that have golden files. */
export const SEED_FORMAT_IDS = [
  'q2c_0', 'nf4',
  'int4_g32', 'int4_g64', 'int4_g128', 'int2_g32', 'int2_g64', 'int2_g128', 'int4c_g32', 'int2c_g32',
  'int2s_g8', 'int2s_g4', 'tern_g32', 'tern_g8', 'tern_g4', 'sign_g32', 'sign_g8', 'sign_g4',
] as const;

/** Deterministic inputs: seeded Gaussian blocks at several scales, then the edge blocks. */
export function seedCases(blockValues: number): { name: string; values: Float32Array }[] {
  const B = blockValues;
  const rng = new Prng(20240601);
  const seeded = new Float32Array(4 * B);
  [0.02, 1, 30, 0.5].forEach((scale, b) => seeded.set(rng.normals(B, scale), b * B));
  const outlier = rng.normals(B, 0.1);
  outlier[5] = 25;
  const fill = (f: (j: number) => number) => Float32Array.from({ length: B }, (_, j) => f(j));
  return [
    { name: 'seeded', values: seeded },
    { name: 'zeros', values: new Float32Array(B) },
    { name: 'constant', values: fill(() => 0.7) },
    { name: 'constant_negative', values: fill(() => -3.25) },
    { name: 'outlier', values: outlier },
    { name: 'pm_max', values: fill((j) => (j % 2 ? -65504 : 65504)) },
    { name: 'tiny', values: rng.normals(B, 1e-6) },
  ];
}
