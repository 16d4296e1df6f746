// Matmul micro-benchmark: the engine bench's shapes per weight type and token count, every variant timed
// call by call in alternation (the shared machine drifts; medians). Variants: wasmMatmul at 1 and N threads
// (kernels against another build of them: bench/matmul-ab.ts). `--cold` rotates through enough copies
// of the weight (> L3) that every call streams its bytes from DRAM, as a decode step over a model does.
// `--cpu`: one-thread variants only, timed by this process's CPU time (batches of calls, alternated): on a
// machine other processes keep busy, wall time measures the scheduler as much as the kernel.
// node dist-test/bench/matmul.js [--types q8_0,q4_0] [--shapes 2048x768,768x2048] [--n 1,64] [--cold [--cold-mib 64]] [--cpu] [--budget 1]
import { encode } from '../src/formats/codec.js';
import { GGML, ggmlTypeByName } from '../src/gguf/types.js';
import { Weight } from '../src/model/forward-weights.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { matmulKernelFor } from '../src/kernels/matmul/plan.js';
import { matmulSplitStats } from '../src/kernels/matmul/job.js';
import { wasmMatmul } from '../src/kernels/matmul/matmul.js';
import { availableCores } from '../src/kernels/runtime/threads.js';
import { wasmKernels } from '../src/kernels/runtime/wasm.js';
import { Prng } from '../src/numeric/prng.js';
import os from 'node:os';
import { cpuAlternated, declareOptions, option, printTable, timeInterleaved } from './harness.js';

/** Bytes of weights a cold run cycles through by default: 64 MiB, several times any L2 and the per-core share of L3 (`--cold-mib` for a larger L3). */
const COLD_BYTES = 64 << 20;
const K_TYPES = new Set<number>([GGML.Q4_K, GGML.Q5_K, GGML.Q6_K]);
const WEIGHT_SIGMA = 0.02;

/** Random K-quant bytes with sane f16 scales (no K-quant encoder in src/formats). */
function randomK(type: number, rows: number, cols: number, rng: Prng): Uint8Array {
  const bb = type === GGML.Q6_K ? 210 : type === GGML.Q5_K ? 176 : 144;
  const bytes = new Uint8Array((cols / 256) * bb * rows);
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(256);
  const f16 = (at: number) => {
    bytes[at] = rng.int(256);
    bytes[at + 1] = 0x1c + rng.int(4);
  };
  for (let b = 0; b < bytes.length; b += bb) {
    if (type === GGML.Q6_K) f16(b + 208);
    else {
      f16(b);
      f16(b + 2);
    }
  }
  return bytes;
}

export interface MatmulRow {
  type: string;
  shape: string;
  n: number;
  variant: string;
  threads: number;
  us: number;
  gbs: number;
  gflops: number;
}

interface Variant {
  name: string;
  threads: number;
  fn: () => void;
}

export function benchMatmulKernels(
  types: string[],
  shapes: [number, number][],
  ns: number[],
  cold: boolean,
  budget: number,
  log: (s: string) => void = () => {},
  cpu = false,
  coldBytes = COLD_BYTES,
): MatmulRow[] {
  const k = wasmKernels();
  if (!k) throw new Error('wasm kernels unavailable');
  const rng = new Prng(5);
  const out: MatmulRow[] = [];
  const all = availableCores();
  for (const name of types) {
    const type = ggmlTypeByName(name).id;
    for (const [rows, cols] of shapes) {
      // Weights at a trained model's scale (sigma 0.02): f16 then has its real share of subnormals (~0.25%).
      const data = K_TYPES.has(type)
        ? randomK(type, rows, cols, rng)
        : encode(
            name,
            rng.normals(rows * cols).map((v) => v * WEIGHT_SIGMA),
            [rows, cols],
          );
      const copies = cold ? Math.max(1, Math.ceil(coldBytes / data.length)) : 1;
      const ws = Array.from({ length: copies }, () => new Weight(name, { type, dims: [cols, rows], data }).packedWeight!);
      let next = 0;
      const w = () => ws[(next = (next + 1) % copies)]!;
      for (const n of ns) {
        const x = rng.normals(n * cols);
        const y = new Float32Array(n * rows);
        const variants: Variant[] = [];
        for (const threads of all > 1 ? [1, all] : [1]) {
          variants.push({
            name: `wasmMatmul (${matmulKernelFor(ws[0]!, n)})`,
            threads,
            fn: () => {
              configureMatmul({ threads, threadChoice: 'always' });
              wasmMatmul(w(), x, n, y);
            },
          });
        }
        if (cpu) variants.splice(0, variants.length, ...variants.filter((v) => v.threads === 1));
        const before = matmulSplitStats();
        const secs = cpu
          ? cpuAlternated(
              variants.map((v) => v.fn),
              budget,
            )
          : timeInterleaved(
              variants.map((v) => v.fn),
              budget,
              20,
              5000,
            );
        const after = matmulSplitStats();
        variants.forEach((v, i) => {
          const s = secs[i]!;
          out.push({
            type: name,
            shape: `${rows}x${cols}`,
            n,
            variant: v.name,
            threads: v.threads,
            us: s * 1e6,
            gbs: data.length / s / 1e9,
            gflops: (2 * rows * cols * n) / s / 1e9,
          });
        });
        const units = after.units - before.units;
        if (units)
          log(
            `${name} ${rows}x${cols} n ${n}: the calling thread ran ${(((after.callerUnits - before.callerUnits) / units) * 100).toFixed(0)}% of ${units} units`,
          );
      }
    }
  }
  configureMatmul({ threadChoice: 'measured' });
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  declareOptions('matmul bench', 'matmul kernels per weight type, shape and token count (GB/s, GFLOP/s)', {
    '--types': { kind: 'strs', help: 'weight types', default: 'q8_0,q4_0,q4_K,f16,f32' },
    '--shapes': { kind: 'strs', help: 'rows x cols', default: '2048x768,768x2048,256x768,32000x768' },
    '--n': { kind: 'ints', min: 1, help: 'token counts', default: '1,64' },
    '--cold': { kind: 'switch', help: 'weights streamed from past the caches' },
    '--cold-mib': { kind: 'num', help: 'MiB of weight copies with --cold', default: COLD_BYTES / 2 ** 20 },
    '--budget': { kind: 'num', help: 'seconds per case', default: 0.5 },
    '--cpu': { kind: 'switch', help: 'CPU time per call, batches alternated' },
  });
  const types = (option('--types') ?? 'q8_0,q4_0,q4_K,f16,f32').split(',');
  const shapes = (option('--shapes') ?? '2048x768,768x2048,256x768,32000x768').split(',').map((s) => s.split('x').map(Number) as [number, number]);
  const ns = (option('--n') ?? '1,64').split(',').map(Number);
  const cold = process.argv.includes('--cold');
  const coldMib = Number(option('--cold-mib') ?? COLD_BYTES / 2 ** 20);
  if (!(coldMib > 0)) {
    console.error(`matmul bench: --cold-mib must be a positive number of MiB, got '${option('--cold-mib')}'`);
    process.exit(2);
  }
  const budget = Number(option('--budget') ?? 0.5);
  const cpu = process.argv.includes('--cpu');
  const load0 = os.loadavg()[0]!;
  const rows = benchMatmulKernels(types, shapes, ns, cold, budget, (s) => process.stderr.write(`${s}\n`), cpu, coldMib * 2 ** 20);
  const clock = cpu ? 'CPU time per call, batches alternated' : 'median per call, variants alternated call by call';
  console.log(
    `matmul, default activations, ${clock}${cold ? `, weights cycled through ${coldMib} MiB (DRAM)` : ' (weights warm in cache)'}; load average ${load0.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} cores`,
  );
  printTable(
    ['type', 'shape', 'n', 'variant', 'threads', 'us/call', 'GB/s', 'GFLOP/s'],
    rows.map((r) => [r.type, r.shape, `${r.n}`, r.variant, `${r.threads}`, r.us.toFixed(1), r.gbs.toFixed(2), r.gflops.toFixed(1)]),
  );
}
