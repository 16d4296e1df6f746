import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matmulShared, Weight } from '../../model/forward-weights.js';
import { matmulPrefetch, matmulSplitStats } from './job.js';
import { configureMatmul, matmulConfig } from './config.js';
import { matmulKernelFor } from './plan.js';
import { ThreadChooser } from './chooser.js';
import { wasmMatmul } from './matmul.js';
import { availableCores } from '../runtime/threads.js';
import { dequantize } from './dequant.js';
import { GGML, ggmlType } from '../../gguf/types.js';
import { wasmFailure } from '../runtime/wasm.js';
import { Prng } from '../../numeric/prng.js';
import { F32_ACT_REL, matmulTolerance, randomWeight } from '../../../test/parity/matmul-weights.js';

// Every type x token path x shape against the reference: test/parity/matmul-gate.ts. Here: the cases it
// does not cover (threads, weight groups, non-finite weights and scales, every f16 bit pattern).

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

/** |y - ref| within the q8-activation bound for one token (matmul-weights.ts). */
function assertQ8Close(name: string, full: Float32Array, x: Float32Array, y: Float32Array, ref: Float32Array, rows: number, cols: number, qb: number): void {
  const tol = matmulTolerance(full, x, rows, cols, qb);
  for (let r = 0; r < rows; r++) assert.ok(Math.abs(y[r]! - ref[r]!) <= tol[r]!, `${name} r ${r}: ${y[r]} vs ${ref[r]} (tol ${tol[r]})`);
}

test('f16 / bf16: the one-token kernel runs at n = 1 and matches the reference on random finite bits (subnormals, zeros, every exponent)', { skip }, () => {
  const rng = new Prng(61);
  for (const [type, expMask] of [
    [GGML.F16, 0x7c00],
    [GGML.BF16, 0x7f80],
  ] as const)
    for (const cols of [5, 8, 37, 64, 130]) {
      for (const rows of [1, 3, 4, 6, 9]) {
        const h = new Uint16Array(rows * cols);
        for (let i = 0; i < h.length; i++) {
          // bf16: keep exponents moderate so products stay finite and normal.
          do h[i] = type === GGML.F16 ? rng.int(0x10000) : (rng.int(2) << 15) | ((100 + rng.int(56)) << 7) | rng.int(128);
          while ((h[i]! & expMask) === expMask);
        }
        const data = new Uint8Array(h.buffer);
        const w = new Weight('w', { type, dims: [cols, rows], data });
        assert.equal(matmulKernelFor(w.packedWeight!, 1), 'matmulVec');
        const full = dequantize(type, data, rows * cols, 'w');
        const x = rng.normals(cols);
        const y = new Float32Array(rows);
        wasmMatmul(w.packedWeight!, x, 1, y);
        for (let r = 0; r < rows; r++) {
          let want = 0,
            mag = 0;
          for (let c = 0; c < cols; c++) {
            want += full[r * cols + c]! * x[c]!;
            mag += Math.abs(full[r * cols + c]! * x[c]!);
          }
          assert.ok(Math.abs(y[r]! - want) <= F32_ACT_REL * mag + 1e-30, `cols ${cols} rows ${rows} r ${r}: ${y[r]} vs ${want}`);
        }
      }
    }
});

test('32-value block weights with an Inf or NaN block scale or min run the exact tiled kernel and keep it', { skip }, () => {
  const rng = new Prng(9);
  const withMin = new Set<number>([GGML.Q4_1, GGML.Q5_1]);
  for (const type of [GGML.Q8_0, GGML.Q4_0, GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL]) {
    const rows = 8,
      cols = 64;
    const data = randomWeight(type, rows, cols, rng);
    const bb = ggmlType(type)!.blockBytes;
    // Row 2's second block scale = +Inf (its min, for the types with one), row 5's first scale = NaN (f16 little-endian).
    data.set([0x00, 0x7c], 2 * 2 * bb + bb + (withMin.has(type) ? 2 : 0));
    data.set([0x00, 0x7e], 5 * 2 * bb);
    const w = new Weight('w', { type, dims: [cols, rows], data });
    assert.notEqual(matmulKernelFor(w.packedWeight!, 1, 'q8'), 'matmulVec');
    const x = new Float32Array(cols).fill(1);
    const y = new Float32Array(rows);
    wasmMatmul(w.packedWeight!, x, 1, y, 'q8');
    const ref = new Float32Array(rows);
    w.matmulRef(x, 1, ref);
    assert.ok(!Number.isFinite(y[2]!) && !Number.isFinite(y[5]!), `non-finite rows stay non-finite: ${y[2]}, ${y[5]}`);
    const full = dequantize(type, data, rows * cols, 'w');
    const keep = [0, 1, 3, 4, 6, 7];
    const sub = (a: Float32Array, len: number) => Float32Array.from(keep.flatMap((r) => Array.from(a.subarray(r * len, (r + 1) * len))));
    assertQ8Close(ggmlType(type)!.name, sub(full, cols), x, sub(y, 1), sub(ref, 1), keep.length, cols, 32);
  }
});

test('threads split rows and give the same bytes as one thread', { skip: skip || (availableCores() < 2 ? 'needs 2 cores' : false) }, () => {
  const rng = new Prng(7);
  const before = matmulConfig();
  try {
    for (const type of [GGML.Q8_0, GGML.Q4_0, GGML.Q4_K, GGML.Q6_K, GGML.F16]) {
      for (const n of [1, 5, 17]) {
        const rows = 514,
          cols = 1024;
        const w = new Weight('w', { type, dims: [cols, rows], data: randomWeight(type, rows, cols, rng) });
        const x = rng.normals(n * cols);
        configureMatmul({ threads: 1 });
        const one = new Float32Array(n * rows);
        w.matmul(x, n, one);
        configureMatmul({ threads: 2, threadChoice: 'always' });
        const two = new Float32Array(n * rows);
        w.matmul(x, n, two);
        assert.deepEqual(two, one);
      }
    }
  } finally {
    configureMatmul(before);
  }
});

test('the thread chooser follows the faster option by its recent median; one stalled call does not flip it; the other is re-timed now and then', () => {
  const c = new ThreadChooser();
  const macs = 1 << 20;
  // Run what it picks for 400 calls: the pool takes 1 ms, one thread 2 ms, but pool call 50 stalls for 40 ms.
  let pool = 0,
    one = 0;
  for (let i = 0; i < 400; i++) {
    const parallel = c.choose(macs);
    if (parallel) pool++;
    else one++;
    c.record(macs, parallel, parallel ? (pool === 50 ? 40 : 1) : 2);
  }
  assert.ok(pool > 380 && one > 0, `pool ${pool} calls, one thread ${one}`);
  // The machine changes (the pool now loses 3 ms to 2): within a few probes the choice follows.
  let lastOne = 0;
  for (let i = 0; i < 1500; i++) {
    const parallel = c.choose(macs);
    if (!parallel) lastOne = i;
    c.record(macs, parallel, parallel ? 3 : 2);
  }
  let recent = 0;
  for (let i = 0; i < 100; i++) {
    const parallel = c.choose(macs);
    if (!parallel) recent++;
    c.record(macs, parallel, parallel ? 3 : 2);
  }
  assert.ok(recent > 90 && lastOne > 1400, `one thread ${recent} of the last 100 calls`);
});

test('configureMatmul rejects bad values', () => {
  assert.throws(() => configureMatmul({ threads: 0 }));
  assert.throws(() => configureMatmul({ activations: 'q4' as 'q8' }));
});

test('a weight group sharing one input gives the same bytes as separate calls (mixed types, biases)', { skip }, () => {
  const rng = new Prng(11);
  const cols = 256;
  const types = [GGML.Q8_0, GGML.Q4_K, GGML.F16, GGML.Q6_K];
  const ws = types.map((type, i) => new Weight(`w${i}`, { type, dims: [cols, 20 + i], data: randomWeight(type, 20 + i, cols, rng) }));
  const biases = ws.map((w, i) => (i % 2 ? rng.normals(w.rows) : undefined));
  for (const n of [1, 9]) {
    const x = rng.normals(n * cols);
    const sep = ws.map((w, i) => {
      const y = new Float32Array(n * w.rows);
      w.matmul(x, n, y, biases[i]);
      return y;
    });
    const grp = ws.map((w) => new Float32Array(n * w.rows));
    matmulShared(ws, x, n, grp, biases);
    assert.deepEqual(grp, sep);
  }
});

test('a threaded weight group runs as one job per four weights, each output the bytes of its own one-thread call', {
  skip: skip || (availableCores() < 2 ? 'needs 2 cores' : false),
}, () => {
  const rng = new Prng(12);
  const cols = 512;
  // Five weights (two jobs), types whose plans differ (one-token kernel, row kernel, f16), rows not a multiple of 4.
  const shapes: [number, number][] = [
    [GGML.Q8_0, 301],
    [GGML.Q4_1, 130],
    [GGML.Q4_0, 257],
    [GGML.F16, 66],
    [GGML.Q8_0, 514],
  ];
  const ws = shapes.map(([type, rows], i) => new Weight(`w${i}`, { type, dims: [cols, rows], data: randomWeight(type, rows, cols, rng) }));
  const before = matmulConfig();
  try {
    for (const n of [1, 3, 9]) {
      const x = rng.normals(n * cols);
      configureMatmul({ threads: 1 });
      const sep = ws.map((w) => {
        const y = new Float32Array(n * w.rows);
        w.matmul(x, n, y);
        return y;
      });
      configureMatmul({ threads: 2, threadChoice: 'always' });
      const stats0 = matmulSplitStats();
      const grp = ws.map((w) => new Float32Array(n * w.rows));
      matmulShared(ws, x, n, grp);
      assert.equal(matmulSplitStats().calls - stats0.calls, 2, `n = ${n}: five weights in two threaded jobs`);
      assert.deepEqual(grp, sep, `n = ${n}`);
    }
  } finally {
    configureMatmul(before);
  }
});

test('a job run on this thread alone waits for a unit a worker took from it (a worker still in a prefetch loop)', {
  skip: skip || (availableCores() < 2 ? 'needs 2 cores' : false),
}, () => {
  const rng = new Prng(13);
  const cols = 256;
  // A big weight to prefetch (the worker loops over its touch units) and a small group below the pool's
  // threshold, which runs on this thread: a worker leaving its prefetch takes units of the next job.
  const big = new Weight('big', { type: GGML.Q8_0, dims: [cols, 8192], data: randomWeight(GGML.Q8_0, 8192, cols, rng) });
  const small = [0, 1, 2, 3].map((i) => new Weight(`s${i}`, { type: GGML.Q8_0, dims: [cols, 24], data: randomWeight(GGML.Q8_0, 24, cols, rng) }));
  const x = rng.normals(cols);
  const before = matmulConfig();
  try {
    configureMatmul({ threads: 1 });
    const want = small.map((w) => {
      const y = new Float32Array(w.rows);
      w.matmul(x, 1, y);
      return y;
    });
    configureMatmul({ threads: 2, threadChoice: 'always' });
    const yb = new Float32Array(big.rows);
    for (let i = 0; i < 1000; i++) {
      big.matmul(x, 1, yb);
      matmulPrefetch([big.packedWeight!]);
      const got = small.map((w) => new Float32Array(w.rows).fill(NaN));
      matmulShared(small, x, 1, got);
      assert.deepEqual(got, want, `round ${i}`);
    }
  } finally {
    configureMatmul(before);
  }
});

test('f16 weights: the fast conversion is exact for finite values; Inf/NaN weights are kept as f32', { skip }, () => {
  const cols = 64,
    rows = 4;
  // 65504, -65504, smallest subnormal, largest subnormal, +-0, 1, -2.5, then random halves below.
  const special = [0x7bff, 0xfbff, 0x0001, 0x03ff, 0x0000, 0x8000, 0x3c00, 0xc100];
  const h = new Uint16Array(rows * cols);
  const rng = new Prng(3);
  for (let i = 0; i < h.length; i++) h[i] = i < special.length ? special[i]! : rng.int(0x7c00) | (rng.int(2) << 15);
  const data = new Uint8Array(h.buffer);
  const w = new Weight('w', { type: GGML.F16, dims: [cols, rows], data });
  assert.equal(w.packedWeight!.type, GGML.F16);
  const full = dequantize(GGML.F16, data, rows * cols, 'w');
  // One-hot inputs read single weights back exactly (decode and tiled prefill paths).
  for (const n of [1, 8]) {
    for (const c of [0, 1, 2, 3, 4, 5, 6, 7, 40]) {
      const x = new Float32Array(n * cols);
      for (let t = 0; t < n; t++) x[t * cols + c] = 1;
      const y = new Float32Array(n * rows);
      w.matmul(x, n, y);
      for (let t = 0; t < n; t++)
        for (let r = 0; r < rows; r++) assert.ok(y[t * rows + r] === full[r * cols + c], `n ${n} c ${c} r ${r}: ${y[t * rows + r]} vs ${full[r * cols + c]}`);
    }
  }
  const bad = h.slice();
  bad[5] = 0x7c00; // +Inf
  bad[70] = 0x7e00; // NaN
  const wb = new Weight('wb', { type: GGML.F16, dims: [cols, rows], data: new Uint8Array(bad.buffer) });
  assert.equal(wb.packedWeight!.type, GGML.F32);
  const x = new Float32Array(cols).fill(1);
  const y = new Float32Array(rows);
  wb.matmul(x, 1, y);
  assert.equal(y[0], Infinity);
  assert.ok(Number.isNaN(y[1]));
});
