// In-process A/B of the matmul kernels: this build's module against another build of assembly/ (for example
// the previous commit's), both instantiated over the same arena memory and reading the same weights, each
// running the kernels its own plan picks for n tokens (activation packing included), one thread, calls
// alternated (medians). Reports time per call and the ratio new / old.
// Build the old module: git archive <rev> assembly | tar -x -C /tmp/old && node node_modules/assemblyscript/bin/asc.js
//   /tmp/old/assembly/index.ts --outFile /tmp/old/kernels.wasm <flags of scripts/build-wasm.mjs>
// node dist-test/bench/matmul-ab.js --old /tmp/old/kernels.wasm [--new build/kernels.wasm] [--cold] [--types q8_0,q4_K] [--shapes 2048x768] [--n 1,64] [--old-plan v1]
// Layout A/B (the file layout against the one weights are repacked to, one build): --old build/kernels-relaxed.wasm
//   --new build/kernels-relaxed.wasm --old-plan v2 --old-repack off; two builds' file-layout kernels: both repacks off.
import { readFileSync } from 'node:fs';
import { ggmlTypeByName, GGML } from '../src/gguf/types.js';
import { Weight } from '../src/model/forward-weights.js';
import { matmulKernelFor } from '../src/kernels/matmul/plan.js';
import { wasmKernels, type WasmExports } from '../src/kernels/runtime/wasm.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { weightType, weightTypeName } from '../src/kernels/matmul/table.js';
import { Prng } from '../src/numeric/prng.js';
import { randomWeight } from '../test/parity/matmul-weights.js';
import { cpuAlternated, declareOptions, option, printTable } from './harness.js';

type Fn = (...a: number[]) => number | void;
type Exports = Record<string, Fn>;
const K = new Set<number>([GGML.Q4_K, GGML.Q5_K, GGML.Q6_K]);
const FLOAT = new Set<number>([GGML.F32, GGML.F16, GGML.BF16]);

/** One call of n tokens as a module's plan runs it; `plan`: 'v1' (before batch invariance) or 'v2' (this build's). */
function caller(
  e: Exports,
  plan: 'v1' | 'v2',
  w: { type: number; ptr: number; rowBytes: number; rows: number; cols: number },
  n: number,
  xp: number,
  yp: number,
  ws: number,
): () => void {
  const { type, ptr, rowBytes, rows, cols } = w;
  const q = ws,
    d = ws + n * cols * 8 + 64,
    s = d + n * cols + 64,
    scratch = s + n * cols + 64;
  const order = e['vecOrder']!(type) as number;
  // Builds before the weight-type table export vecMaxTokens; this one keeps it in the table.
  const maxTokens = e['vecMaxTokens'] ? (e['vecMaxTokens'](type) as number) : (weightType(type)?.oneToken?.maxTokens ?? 0);
  const vec = order >= 0 && n <= maxTokens;
  if (vec)
    return () => {
      e['packActVecN']!(xp, n, cols, order, q, d, s);
      e['matmulVec']!(type, ptr, rowBytes, rows, cols, q, d, s, n, yp, rows);
    };
  const qb = K.has(type) ? 256 : 32;
  if (!FLOAT.has(type)) {
    if (plan === 'v1' && n < 4)
      return () => {
        e['quantizeActs']!(xp, n, cols, qb, q, d, s);
        e['matmulQ8Act']!(type, ptr, rowBytes, rows, cols, q, d, s, n, yp, rows, scratch);
      };
    return () => {
      e['packActQ8']!(xp, n, cols, qb, q, d, s);
      e['matmulQ8Tiled']!(type, ptr, rowBytes, rows, cols, q, d, s, n, yp, rows, scratch);
    };
  }
  if (plan === 'v1') {
    if (n < 8) return () => e['matmulF32Act']!(type, ptr, rowBytes, rows, cols, xp, n, yp, rows, scratch);
    return () => {
      e['packActF32']!(xp, n, cols, q);
      e['matmulF32Tiled']!(type, ptr, rowBytes, rows, cols, q, n, yp, rows, scratch);
    };
  }
  if (type === GGML.F32) return () => e['matmulF32Tiled']!(type, ptr, rowBytes, rows, cols, xp, n, yp, rows, scratch);
  return () => {
    e['packActVecN']!(xp, n, cols, 3, q, d, s);
    e['matmulF32Tiled']!(type, ptr, rowBytes, rows, cols, q, n, yp, rows, scratch);
  };
}

declareOptions('matmul-ab', 'in-process A/B of two builds of the matmul kernels (one thread, calls alternated)', {
  '--old': { kind: 'str', help: 'the old kernels.wasm (required; the header says how to build it)' },
  '--new': { kind: 'str', help: 'the new kernels.wasm', default: 'build/kernels.wasm' },
  '--old-plan': { kind: 'str', choices: ['v1', 'v2'], help: 'the kernel plan of the old side', default: 'v1' },
  '--types': { kind: 'strs', help: 'weight types', default: 'q8_0,q4_0,q4_K,q6_K,f16' },
  '--shapes': { kind: 'strs', help: 'rows x cols', default: '2048x768,768x2048' },
  '--n': { kind: 'ints', min: 1, help: 'token counts', default: '1,2,4,8,64' },
  '--budget': { kind: 'num', help: 'seconds per case', default: 0.6 },
  '--count': { kind: 'str', choices: ['old', 'new'], help: 'only run that side, untimed (for callgrind)' },
  '--reps': { kind: 'int', min: 1, help: 'calls per case with --count', default: 100 },
  '--old-repack': { kind: 'str', choices: ['on', 'off'], help: "the old side's weights repacked at load (off: the file layout)", default: 'on' },
  '--new-repack': { kind: 'str', choices: ['on', 'off'], help: "the new side's weights repacked at load (off: the file layout)", default: 'on' },
  '--cold': { kind: 'switch', help: 'each call reads one of 96 MiB of weight copies (past L3), as decode streams weights' },
});
const oldPath = option('--old');
if (!oldPath) {
  console.error('matmul-ab: --old <kernels.wasm> is required (see the header for how to build it)');
  process.exit(2);
}
const k = wasmKernels();
if (!k) throw new Error('wasm kernels unavailable');
const oldE = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(oldPath)), { env: { memory: k.arena.memory } }).exports as unknown as Exports;
// The new side is a separate instance too (of this build's module, or --new), so neither side runs the
// code the engine instantiated (an A/A run, --old build/kernels.wasm, showed the main instance's code placement alone worth 14%).
const newPath = option('--new') ?? 'build/kernels.wasm';
const newE = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(newPath)), { env: { memory: k.arena.memory } }).exports as unknown as WasmExports &
  Exports;
const oldPlan = (option('--old-plan') ?? 'v1') as 'v1' | 'v2';
const types = (option('--types') ?? 'q8_0,q4_0,q4_K,q6_K,f16').split(',');
const shapes = (option('--shapes') ?? '2048x768,768x2048').split(',').map((s) => s.split('x').map(Number) as [number, number]);
const ns = (option('--n') ?? '1,2,4,8,64').split(',').map(Number);
const budget = Number(option('--budget') ?? 0.6);
/** `--count old|new --reps R`: only run that side R times per case, untimed (for valgrind --tool=callgrind instruction counts). */
const count = option('--count');
const reps = Number(option('--reps') ?? 100);
const cold = process.argv.includes('--cold');
const oldRepack = (option('--old-repack') ?? 'on') === 'on';
const newRepack = (option('--new-repack') ?? 'on') === 'on';
const rng = new Prng(3);
const rows: string[][] = [];
for (const name of types) {
  const type = ggmlTypeByName(name).id;
  for (const [r, c] of shapes) {
    const data = randomWeight(type, r, c, rng);
    // --cold: copies of the weight through 96 MiB (past L3), one per call in turn, as a decode step streams its weights.
    const copies = cold ? Math.max(1, Math.ceil((96 << 20) / data.length)) : 1;
    const load = (repack: boolean) => {
      configureMatmul({ repack });
      try {
        return Array.from({ length: copies }, () => new Weight(name, { type, dims: [c, r], data }).packedWeight!);
      } finally {
        configureMatmul({ repack: true });
      }
    };
    const ws = load(newRepack);
    const wsOldSide = oldRepack === newRepack ? ws : load(oldRepack);
    const w = ws[0]!;
    for (const n of ns) {
      const a = k.arena;
      const xp = a.alloc(n * c * 4),
        yOld = a.alloc(n * r * 4),
        yNew = a.alloc(n * r * 4);
      const wsBytes = n * c * 10 + 4096 + 4 * (newE['matmulTileScratchBytes']!(c) as number) + 65536;
      const wsOld = a.alloc(wsBytes),
        wsNew = a.alloc(wsBytes);
      new Float32Array(a.memory.buffer, xp, n * c).set(rng.normals(n * c));
      const rot = (e: Exports, plan: 'v1' | 'v2', y: number, wsp: number, side = ws) => {
        const fs = side.map((wi) => caller(e, plan, wi, n, xp, y, wsp));
        let i = 0;
        return () => fs[(i = (i + 1) % fs.length)]!();
      };
      const fns = [rot(oldE, oldPlan, yOld, wsOld, wsOldSide), rot(newE, 'v2', yNew, wsNew)];
      if (count) {
        const fn = fns[count === 'old' ? 0 : 1]!;
        for (let i = 0; i < reps; i++) fn();
      } else {
        const [tOld, tNew] = cpuAlternated(fns, budget) as [number, number];
        rows.push([
          name,
          `${r}x${c}`,
          `${n}`,
          `${matmulKernelFor(w, n)} ${weightTypeName(w.type)}`,
          (tOld * 1e6).toFixed(1),
          (tNew * 1e6).toFixed(1),
          (tNew / tOld).toFixed(3),
          (data.length / tNew / 1e9).toFixed(2),
        ]);
      }
      for (const p of [xp, yOld, yNew, wsOld, wsNew]) a.free(p);
    }
  }
}
if (!count)
  console.log(
    `matmul A/B, one thread, weights warm, CPU time per call, batches alternated (medians of 21)${cold ? ', weights cycled through 96 MiB' : ''}; old: ${oldPath} (plan ${oldPlan}${oldRepack ? '' : ', file layout'})${newRepack ? '' : '; new: file layout'}`,
  );
if (!count) printTable(['type', 'shape', 'n', 'new kernel', 'old us', 'new us', 'new/old', 'new GB/s'], rows);
