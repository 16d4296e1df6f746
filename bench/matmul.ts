// Matmul micro-benchmark: wasmMatmul on the engine bench's shapes, per weight type, token count and thread
// count, the thread counts timed call by call in alternation (the shared machine drifts; medians). `--cold`
// rotates through enough copies of the weight (> L3) that every call streams its bytes from DRAM, as a
// decode step over a whole model does.
// node dist/bench/matmul.js [--types q8_0,q4_0] [--shapes 2048x768,768x2048] [--n 1,64] [--cold] [--budget 1]
import { encode } from '../src/formats/codec.js';
import { GGML, ggmlTypeByName } from '../src/gguf/types.js';
import { Weight } from '../src/model/forward-weights.js';
import { closeMatmulThreads, configureMatmul, wasmMatmul } from '../src/model/matmul-wasm.js';
import { availableCores } from '../src/model/threads.js';
import { Prng } from '../src/numeric/prng.js';
import { option, printTable, timeInterleaved } from './harness.js';

/** Bytes of weights a cold run cycles through: twice a 32 MiB L3. */
const COLD_BYTES = 64 << 20;

/** Random K-quant bytes with sane f16 scales (no K-quant encoder in src/formats). */
function randomK(type: number, rows: number, cols: number, rng: Prng): Uint8Array {
  const bb = type === GGML.Q6_K ? 210 : type === GGML.Q5_K ? 176 : 144;
  const bytes = new Uint8Array((cols / 256) * bb * rows);
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(256);
  const f16 = (at: number) => { bytes[at] = rng.int(256); bytes[at + 1] = 0x1c + rng.int(4); };
  for (let b = 0; b < bytes.length; b += bb) {
    if (type === GGML.Q6_K) f16(b + 208);
    else { f16(b); f16(b + 2); }
  }
  return bytes;
}

export interface MatmulRow { type: string; shape: string; n: number; threads: number; us: number; gbs: number; gflops: number }

export function benchMatmulKernels(types: string[], shapes: [number, number][], ns: number[], cold: boolean, budget: number): MatmulRow[] {
  const rng = new Prng(5);
  const out: MatmulRow[] = [];
  const all = availableCores();
  for (const name of types) {
    const type = ggmlTypeByName(name).id;
    for (const [rows, cols] of shapes) {
      const data = type === GGML.Q4_K || type === GGML.Q5_K || type === GGML.Q6_K ? randomK(type, rows, cols, rng) : encode(name, rng.normals(rows * cols), [rows, cols]);
      const copies = cold ? Math.max(1, Math.ceil(COLD_BYTES / data.length)) : 1;
      const ws = Array.from({ length: copies }, () => new Weight(name, { type, dims: [cols, rows], data }));
      let next = 0;
      for (const n of ns) {
        const x = rng.normals(n * cols);
        const y = new Float32Array(n * rows);
        const run = (threads: number) => () => {
          configureMatmul({ threads, threadChoice: 'always' });
          wasmMatmul(ws[next]!.packedWeight!, x, n, y);
          next = (next + 1) % copies;
        };
        const threads = all > 1 ? [1, all] : [1];
        const secs = timeInterleaved(threads.map(run), budget, 20, 2000);
        threads.forEach((t, i) => {
          const s = secs[i]!;
          out.push({ type: name, shape: `${rows}x${cols}`, n, threads: t, us: s * 1e6, gbs: data.length / s / 1e9, gflops: (2 * rows * cols * n) / s / 1e9 });
        });
      }
    }
  }
  configureMatmul({ threadChoice: 'measured' });
  closeMatmulThreads();
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const types = (option('--types') ?? 'q8_0,q4_0,f16,f32,q4_K').split(',');
  const shapes = (option('--shapes') ?? '2048x768,768x2048,32000x768').split(',').map((s) => s.split('x').map(Number) as [number, number]);
  const ns = (option('--n') ?? '1,64').split(',').map(Number);
  const cold = process.argv.includes('--cold');
  const budget = Number(option('--budget') ?? 0.5);
  const rows = benchMatmulKernels(types, shapes, ns, cold, budget);
  console.log(`wasmMatmul, default activations, median per call, thread counts alternated call by call${cold ? ', weights cycled through 64 MiB (DRAM)' : ' (weights warm in cache)'}`);
  printTable(['type', 'shape', 'n', 'threads', 'us/call', 'GB/s', 'GFLOP/s'], rows.map((r) => [r.type, r.shape, `${r.n}`, `${r.threads}`, r.us.toFixed(1), r.gbs.toFixed(2), r.gflops.toFixed(1)]));
}
