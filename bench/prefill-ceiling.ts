// How fast can any int8 prefill kernel run in this engine's 128-bit relaxed SIMD, against what native llama.cpp
// reaches on the same machine in the same run? Times the relaxed prefill tile's register tile alone
// (assembly/bench/int8_ceiling.ts: 4 rows x 8 tokens of i16x8.relaxed_dot_i8x16_i7x16_s over L1-resident operands,
// no weight decode, no activation packing, no memory traffic) on 1 and N threads, in four steps (dots; + the
// i16 -> i32 widening per 32 values every exact kernel needs; + a bare q4_0 float step; + the float step as
// relaxed_tile.ts does it, loads, offset and all), and kvpack's real relaxed tile
// at the same shape. With --model, native llama-bench's prefill of that GGUF in the same run, turned into
// multiply-adds per second from the file's own matrices: the quotient says what fraction of native the kernel could
// reach even if everything but its inner loop were free.
// node dist-test/bench/prefill-ceiling.js [--model GGUF] [--prompt 512] [--threads 2] [--cols 4096]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { kernelBuild } from '../src/kernels/runtime/wasm.js';
import { readGguf } from '../src/gguf/reader.js';
import { ggmlTypeByName } from '../src/gguf/types.js';
import { Weight } from '../src/model/forward-weights.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { wasmMatmul } from '../src/kernels/matmul/matmul.js';
import { Prng } from '../src/numeric/prng.js';
import { randomWeight } from '../test/parity/matmul-weights.js';
import { declareOptions, median, option, printTable } from './harness.js';
import { fmtLoad, llamaBench, nativeLlama, nativeTps } from './native-llama.js';

declareOptions('prefill-ceiling', 'the int8 register tile alone vs kvpack tiles vs native prefill, in multiply-adds per second', {
  '--model': { kind: 'str', help: 'also run native llama-bench prefill on this GGUF and compare' },
  '--prompt': { kind: 'int', min: 1, help: 'native prefill tokens', default: 512 },
  '--threads': { kind: 'int', min: 1, help: 'threads of the N-thread rows and of native', default: 2 },
  '--cols': { kind: 'int', min: 32, help: 'columns of the register tile (a multiple of 32; L1-resident up to ~4096)', default: 4096 },
  '--seconds': { kind: 'num', help: 'seconds per timed point', default: 0.3 },
});

const build = kernelBuild(); // sets V8's relaxed-SIMD flags on Node 20 before the compile below
if (!build?.relaxed) {
  console.log(`prefill-ceiling: the kernels run ${build?.note ?? 'no wasm'}: no relaxed SIMD to measure`);
  process.exit(0);
}
const threads = Number(option('--threads') ?? 2);
const cols = Number(option('--cols') ?? 4096);
if (cols % 32) {
  console.error(`--cols must be a multiple of 32, got ${cols}`);
  process.exit(2);
}
const seconds = Number(option('--seconds') ?? 0.3);

/** The ceiling module, compiled by asc from assembly/bench/int8_ceiling.ts (the bench's own build, not the kernels'). */
function compileCeiling(): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-ceiling-'));
  const out = join(dir, 'ceiling.wasm');
  // From the repo root (dist-test/bench/ is two levels down), wherever the bench is started from.
  const root = fileURLToPath(new URL('../../', import.meta.url));
  execFileSync(process.execPath, [
    join(root, 'node_modules/assemblyscript/bin/asc.js'),
    join(root, 'assembly/bench/int8_ceiling.ts'),
    '--outFile',
    out,
    '-O3',
    '--noAssert',
    '--runtime',
    'stub',
    '--enable',
    'simd,relaxed-simd',
    '--initialMemory',
    '1',
  ]);
  const bytes = readFileSync(out);
  rmSync(dir, { recursive: true });
  return bytes;
}

const VARIANTS = ['dots only', '+ widen per 32', '+ q4_0 float step', "+ q4_0 float step as relaxed_tile.ts's"] as const;

// One worker's timing of one variant (n workers at once for the N-thread column): GMAC/s.
const WORKER_SRC = `
const { parentPort, workerData } = require('node:worker_threads');
const { bytes, cols, seconds, variant, pairs } = workerData;
const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
const B = 1024, X = B + 4 * cols, S = X + 8 * cols * pairs;
const need = S + 32768;
const have = inst.exports.memory.buffer.byteLength;
if (need > have) inst.exports.memory.grow(Math.ceil((need - have) / 65536));
const mem = new Uint8Array(inst.exports.memory.buffer);
for (let i = 0; i < 4 * cols; i++) mem[B + i] = (i * 7) & 15;
for (let i = 0; i < 8 * cols * pairs; i++) mem[X + i] = ((i * 37) & 255) - 128;
new Float32Array(inst.exports.memory.buffer, S, 8192).fill(0.01);
const reps = Math.max(1, Math.round(2e7 / (32 * cols)));
inst.exports.tileLoop(variant, B, X, cols, reps, pairs, S);
const times = [];
const end = performance.now() + seconds * 1000;
while (performance.now() < end || times.length < 5) {
  const t0 = performance.now();
  inst.exports.tileLoop(variant, B, X, cols, reps, pairs, S);
  times.push((performance.now() - t0) / 1000);
}
times.sort((a, b) => a - b);
parentPort.postMessage((reps * 32 * cols) / times[times.length >> 1] / 1e9);
`;

/** GMAC/s per thread of `variant` on `n` threads running at once (each its own instance and memory). */
async function tileRate(bytes: Uint8Array, variant: number, n: number, pairs = 1): Promise<number[]> {
  const run = () =>
    new Promise<number>((resolve, reject) => {
      const w = new Worker(WORKER_SRC, { eval: true, workerData: { bytes, cols, seconds, variant, pairs } });
      w.once('message', (v: number) => {
        resolve(v);
        void w.terminate();
      });
      w.once('error', reject);
    });
  return Promise.all(Array.from({ length: n }, run));
}

/** kvpack's own relaxed q4_0 tile through wasmMatmul (decode, packing, memory included): GMAC/s on `t` threads. */
function kvpackRate(t: number, rows: number, n: number): number {
  configureMatmul({ threads: t, threadChoice: 'always' });
  const rng = new Prng(7);
  const type = ggmlTypeByName('q4_0').id;
  const w = new Weight('bench', { type, dims: [cols, rows], data: randomWeight(type, rows, cols, rng) }).packedWeight!;
  const x = new Float32Array(n * cols).map(() => rng.normal());
  const y = new Float32Array(n * rows);
  const times: number[] = [];
  wasmMatmul(w, x, n, y, 'q8');
  const end = performance.now() + seconds * 3000;
  while (performance.now() < end || times.length < 5) {
    const t0 = performance.now();
    wasmMatmul(w, x, n, y, 'q8');
    times.push((performance.now() - t0) / 1000);
  }
  return (rows * cols * n) / median(times) / 1e9;
}

/** Multiply-adds per prompt token of a GGUF's matrices: every 2-D tensor but the embedding table (a gather) and the output (both engines compute the last token's logits only). */
function macsPerToken(path: string): number {
  let macs = 0;
  for (const t of readGguf(path).tensors)
    if (t.dims.length === 2 && t.dims[1]! > 1 && t.name !== 'token_embd.weight' && t.name !== 'output.weight') macs += t.dims[0]! * t.dims[1]!;
  return macs;
}

const bytes = compileCeiling();
console.log(`prefill-ceiling: kernels ${build.note}; register tile 4 rows x 8 tokens x ${cols} columns, L1-resident, ${seconds} s per point`);
const rows: string[][] = [];
const perThread: number[][] = [];
for (let v = 0; v < VARIANTS.length; v++) {
  const one = (await tileRate(bytes, v, 1))[0]!;
  const many = await tileRate(bytes, v, threads);
  perThread.push([one, ...many]);
  rows.push([`register tile: ${VARIANTS[v]}`, one.toFixed(1), many.reduce((a, b) => a + b, 0).toFixed(1)]);
}
const shape = { rows: 4096, n: 128 };
{
  // The kernel's own float step again, its activations streamed as a call of shape.n tokens streams them (from L2, not L1).
  const pairs = shape.n / 8;
  const one = (await tileRate(bytes, 3, 1, pairs))[0]!;
  const many = await tileRate(bytes, 3, threads, pairs);
  rows.push([`register tile: + its float step, x of ${shape.n} tokens`, one.toFixed(1), many.reduce((a, b) => a + b, 0).toFixed(1)]);
}
const k1 = kvpackRate(1, shape.rows, shape.n);
const kN = kvpackRate(threads, shape.rows, shape.n);
rows.push([`kvpack relaxed q4_0 tiles, [${shape.rows}, ${cols}] x ${shape.n} tokens`, k1.toFixed(1), kN.toFixed(1)]);
const model = option('--model');
let native: number | null = null;
if (model) {
  const status = nativeLlama((s) => console.log(s));
  if (!status.ok) console.log(`no native figure: ${status.reason}`);
  else {
    const prompt = Number(option('--prompt') ?? 512);
    const { results, load } = llamaBench(status.native, { model, threads, prompt, gen: 0, depth: 0, kv: 'f16', reps: 3 });
    const tps = nativeTps(results, 'pp');
    native = (tps * macsPerToken(model)) / 1e9;
    rows.push([`native llama.cpp prefill ${prompt}, ${model.split('/').pop()} (${tps.toFixed(1)} tok/s, load ${fmtLoad(load)})`, '', native.toFixed(1)]);
  }
}
printTable(['GMAC/s', '1 thread', `${threads} threads`], rows);
if (native !== null) {
  const ceilingN = perThread[1]!.slice(1).reduce((a, b) => a + b, 0);
  const realN = perThread[3]!.slice(1).reduce((a, b) => a + b, 0);
  console.log(
    `the register tile alone on ${threads} threads, widened: ${(ceilingN / native).toFixed(2)}x native's whole prefill; with relaxed_tile.ts's float step ${(realN / native).toFixed(2)}x; kvpack's tiles ${(kN / native).toFixed(2)}x`,
  );
}
