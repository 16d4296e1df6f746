// Batch invariance of the weight matmuls: a token's output row has the same bits whether it is multiplied
// alone or in a batch of any size, on 1 or 2 threads, in a weight group or alone, whatever kernel the plan
// picks for that batch (one-token, tiled), for every weight type the wasm kernels take and for the TS path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matmulShared, Weight } from '../../src/model/forward-weights.js';
import { configureMatmul, matmulConfig, type Activations } from '../../src/kernels/matmul/config.js';
import { matmulKernelFor } from '../../src/kernels/matmul/plan.js';
import { availableCores } from '../../src/kernels/runtime/threads.js';
import { GGML, ggmlType } from '../../src/gguf/types.js';
import { wasmFailure } from '../../src/kernels/runtime/wasm.js';
import { Prng } from '../../src/numeric/prng.js';
import { FLOAT_TYPES, MATMUL_TYPES, randomWeight } from './matmul-weights.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;
/** Batch sizes: the one-token kernels' range (1..6), the tiles' first quads, odd tails, big batches. */
const TOKENS = [1, 2, 3, 5, 7, 8, 9, 16, 33, 64, 512];
/** 261 rows: a leftover row after the four-row groups, and enough work at n = 1 for the pool to split it. */
const ROWS = 261;

/** The first index where two outputs' bits differ, or -1 (NaN payloads compared too). */
function firstDiff(a: Float32Array, b: Float32Array): number {
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (ua.length !== ub.length) return 0;
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

/** Checks y [n, rows] token by token against one [rows] (token t computed alone) per token. */
function assertRowsMatch(label: string, y: Float32Array, alone: readonly Float32Array[], n: number, rows: number): void {
  for (let t = 0; t < n; t++) {
    const row = y.subarray(t * rows, (t + 1) * rows);
    const i = firstDiff(row, alone[t]!);
    assert.equal(i, -1, `${label}: token ${t} row ${i}: ${row[i]} vs ${alone[t]![i]} alone`);
  }
}

test('bit comparison: one ulp in one output is a difference (negative control)', () => {
  const a = new Prng(1).normals(64);
  const b = a.slice();
  assert.equal(firstDiff(a, b), -1);
  new Uint32Array(b.buffer)[17]! += 1;
  assert.equal(firstDiff(a, b), 17);
});

for (const type of MATMUL_TYPES) {
  const name = ggmlType(type)!.name;
  const acts: Activations[] = FLOAT_TYPES.has(type) ? ['f32'] : ['q8', 'f32'];
  const colsList = FLOAT_TYPES.has(type) ? [512, 37] : [512];
  test(`matmul batch invariance ${name}: every token's row equal to the token alone, n ${TOKENS.join('/')} x threads 1/2 x alone/group`, { skip }, () => {
    const before = matmulConfig();
    const rng = new Prng(500 + type);
    const kernels = new Set<string>();
    try {
      for (const cols of colsList) {
        const w = new Weight('w', { type, dims: [cols, ROWS], data: randomWeight(type, ROWS, cols, rng) });
        // A group partner of another type (another plan), sharing the input.
        const ot = FLOAT_TYPES.has(type) ? (type === GGML.F16 ? GGML.F32 : GGML.F16) : type === GGML.Q8_0 ? GGML.Q4_K : GGML.Q8_0;
        const other = new Weight('v', { type: ot, dims: [cols, 64], data: randomWeight(ot, 64, cols, rng) });
        const nMax = TOKENS.at(-1)!;
        const x = rng.normals(nMax * cols);
        for (const a of acts) {
          configureMatmul({ activations: a, threads: 1 });
          const alone = Array.from({ length: nMax }, (_, t) => {
            const y = new Float32Array(ROWS);
            w.matmul(x.subarray(t * cols, (t + 1) * cols), 1, y);
            return y;
          });
          for (const threads of availableCores() >= 2 ? [1, 2] : [1]) {
            configureMatmul({ activations: a, threads, threadChoice: 'always' });
            for (const n of TOKENS) {
              kernels.add(`${a}:${matmulKernelFor(w.packedWeight!, n, a)}`);
              const y = new Float32Array(n * ROWS);
              w.matmul(x, n, y);
              assertRowsMatch(`${name} [${ROWS}, ${cols}] ${a} acts n=${n} threads ${threads} ${matmulKernelFor(w.packedWeight!, n, a)}`, y, alone, n, ROWS);
              const g = [new Float32Array(n * other.rows), new Float32Array(n * ROWS)];
              matmulShared([other, w], x, n, g);
              assertRowsMatch(`${name} [${ROWS}, ${cols}] ${a} acts n=${n} threads ${threads} in a group`, g[1]!, alone, n, ROWS);
            }
          }
        }
      }
    } finally {
      configureMatmul(before);
    }
    // The sizes crossed a kernel boundary for the types that have two kernels (else the check proves less).
    if (type !== GGML.F32) assert.ok(kernels.size >= 2, `${name}: only ${[...kernels].join(', ')} ran`);
  });
}

test("matmul batch invariance, long q8_0 / q4_0 rows (the one-token kernel's eight-row groups): n 1/2/3/7/16 x threads 1/2", { skip }, () => {
  const before = matmulConfig();
  const rng = new Prng(91);
  try {
    for (const type of [GGML.Q8_0, GGML.Q4_0]) {
      // 7680 values: 8160 / 4320 B per row; 29 rows: three groups of eight, one of four, one left over.
      const cols = 7680,
        rows = 29;
      const w = new Weight('w', { type, dims: [cols, rows], data: randomWeight(type, rows, cols, rng) });
      const x = rng.normals(16 * cols);
      configureMatmul({ activations: 'q8', threads: 1 });
      const alone = Array.from({ length: 16 }, (_, t) => {
        const y = new Float32Array(rows);
        w.matmul(x.subarray(t * cols, (t + 1) * cols), 1, y);
        return y;
      });
      for (const threads of availableCores() >= 2 ? [1, 2] : [1]) {
        configureMatmul({ activations: 'q8', threads, threadChoice: 'always' });
        for (const n of [1, 2, 3, 7, 16]) {
          const y = new Float32Array(n * rows);
          w.matmul(x, n, y);
          assertRowsMatch(`${ggmlType(type)!.name} [${rows}, ${cols}] n=${n} threads ${threads}`, y, alone, n, rows);
        }
      }
    }
  } finally {
    configureMatmul(before);
  }
});

test('TS reference matmul batch invariance: every type, every token equal to the token alone', () => {
  const rng = new Prng(77);
  for (const type of MATMUL_TYPES) {
    const cols = FLOAT_TYPES.has(type) ? 37 : 256;
    const rows = 9;
    const w = new Weight('w', { type, dims: [cols, rows], data: randomWeight(type, rows, cols, rng) });
    const x = rng.normals(9 * cols);
    const alone = Array.from({ length: 9 }, (_, t) => {
      const y = new Float32Array(rows);
      w.matmulRef(x.subarray(t * cols, (t + 1) * cols), 1, y);
      return y;
    });
    for (const n of [1, 2, 3, 4, 5, 8, 9]) {
      const y = new Float32Array(n * rows);
      w.matmulRef(x, n, y);
      assertRowsMatch(`${ggmlType(type)!.name} TS n=${n}`, y, alone, n, rows);
    }
  }
});
