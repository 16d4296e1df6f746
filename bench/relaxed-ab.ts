// In-process A/B of the relaxed-SIMD prefill tiles against the baseline tiles: the same module (the relaxed
// build holds both), the same weights and activations, wasmMatmul with configureMatmul({ relaxed }) on and
// off (activation packing included), one thread, batches alternated, median CPU time per call. The outputs
// of both sides are compared bit for bit as they run (the gate's claim, re-checked on the bench shapes).
// With --model PATH: prefill of --prompt tokens on that GGUF instead, relaxed tiles on and off alternated
// (a fresh f16 cache per call), --threads threads, median CPU time per prefill and the logits compared.
// node dist-test/bench/relaxed-ab.js [--types q4_0,q8_0] [--shapes 2048x768,768x2048] [--n 16,64,128] [--budget 0.6]
// node dist-test/bench/relaxed-ab.js --model /tmp/kvpack-bench-llama-d768-l12-v32000-c33280-q4_0.gguf [--prompt 128] [--threads 1]
import { ggmlTypeByName } from '../src/gguf/types.js';
import { Weight } from '../src/model/forward-weights.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { matmulKernelFor } from '../src/kernels/matmul/plan.js';
import { wasmMatmul } from '../src/kernels/matmul/matmul.js';
import { kernelBuild } from '../src/kernels/runtime/wasm.js';
import { Prng } from '../src/numeric/prng.js';
import { randomWeight } from '../test/parity/matmul-weights.js';
import { cpuAlternated, declareOptions, option, printTable } from './harness.js';
import { loadModel } from '../src/model/model.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { fmtLoad, withLoad } from './native-llama.js';

declareOptions('relaxed-ab', 'relaxed-SIMD tiles on vs off: matmul per type and shape, or prefill of --model', {
  '--model': { kind: 'str', help: 'prefill A/B on this GGUF instead of the matmul table' },
  '--threads': { kind: 'int', min: 1, help: 'threads of the prefill A/B', default: 1 },
  '--prompt': { kind: 'int', min: 1, help: 'prompt tokens of the prefill A/B', default: 128 },
  '--types': { kind: 'strs', help: 'weight types', default: 'q4_0,q8_0,q4_1,q5_0,iq4_nl' },
  '--shapes': { kind: 'strs', help: 'rows x cols', default: '2048x768,768x2048' },
  '--n': { kind: 'ints', min: 1, help: 'token counts', default: '16,64,128' },
  '--budget': { kind: 'num', help: 'seconds per case (prefill A/B: 20)', default: 0.6 },
});
const build = kernelBuild();
if (!build?.relaxed) {
  console.log(`relaxed-ab: the kernels run ${build?.note ?? 'no wasm'}: nothing to compare`);
  process.exit(0);
}
const modelPath = option('--model');
if (modelPath) {
  prefillAB(modelPath);
  process.exit(0);
}

/** Prefill A/B on a model: relaxed tiles on / off, alternated, median CPU seconds per prefill. */
function prefillAB(path: string): void {
  const threads = Number(option('--threads') ?? 1);
  const prompt = Number(option('--prompt') ?? 128);
  configureMatmul({ threads });
  const model = loadModel(path, { expand: false });
  const tokens = Array.from({ length: prompt }, (_, i) => 300 + ((i * 7919) % Math.max(1, model.nVocab - 300)));
  const logits: Float32Array[] = [new Float32Array(0), new Float32Array(0)];
  const side = (relaxed: boolean, i: number) => () => {
    configureMatmul({ relaxed });
    const cache = model.createCache({ policy: schemePolicy('f16'), capacity: prompt + 16 });
    logits[i] = model.forward(tokens, cache).slice();
    cache.dispose();
  };
  const { value, load } = withLoad(() => cpuAlternated([side(false, 0), side(true, 1)], Number(option('--budget') ?? 20)));
  const [tBase, tRelaxed] = value as [number, number];
  const same = Buffer.compare(Buffer.from(logits[0]!.buffer), Buffer.from(logits[1]!.buffer)) === 0;
  console.log(
    `prefill ${prompt} tokens of ${path}, ${threads} thread(s), ${build!.note}; CPU time per prefill, alternated (medians of 21); load ${fmtLoad(load)}`,
  );
  printTable(
    ['baseline tiles ms', 'relaxed tiles ms', 'relaxed/base', 'relaxed tok/CPU-s', 'last logits'],
    [[(tBase * 1e3).toFixed(1), (tRelaxed * 1e3).toFixed(1), (tRelaxed / tBase).toFixed(3), (prompt / tRelaxed).toFixed(1), same ? 'same bits' : 'DIFFER']],
  );
}

const types = (option('--types') ?? 'q4_0,q8_0,q4_1,q5_0,iq4_nl').split(',');
const shapes = (option('--shapes') ?? '2048x768,768x2048').split(',').map((s) => s.split('x').map(Number) as [number, number]);
const ns = (option('--n') ?? '16,64,128').split(',').map(Number);
const budget = Number(option('--budget') ?? 0.6);
configureMatmul({ threads: 1 });
const rng = new Prng(11);
const rows: string[][] = [];
const { load } = withLoad(() => {
  for (const name of types) {
    const type = ggmlTypeByName(name).id;
    for (const [r, c] of shapes) {
      const w = new Weight(name, { type, dims: [c, r], data: randomWeight(type, r, c, rng) }).packedWeight!;
      for (const n of ns) {
        const x = rng.normals(n * c);
        const yBase = new Float32Array(n * r);
        const yRelaxed = new Float32Array(n * r);
        const side = (relaxed: boolean, y: Float32Array) => () => {
          configureMatmul({ relaxed });
          wasmMatmul(w, x, n, y, 'q8');
        };
        const [tBase, tRelaxed] = cpuAlternated([side(false, yBase), side(true, yRelaxed)], budget) as [number, number];
        const kernel = matmulKernelFor(w, n, 'q8');
        configureMatmul({ relaxed: false });
        const baseKernel = matmulKernelFor(w, n, 'q8');
        configureMatmul({ relaxed: true });
        const same = Buffer.compare(Buffer.from(yBase.buffer), Buffer.from(yRelaxed.buffer)) === 0;
        rows.push([
          name,
          `${r}x${c}`,
          `${n}`,
          `${baseKernel} / ${kernel}`,
          (tBase * 1e6).toFixed(1),
          (tRelaxed * 1e6).toFixed(1),
          (tRelaxed / tBase).toFixed(3),
          ((r * c * n) / tRelaxed / 1e9).toFixed(1),
          same ? 'same' : 'DIFFER',
        ]);
      }
    }
  }
});
console.log(
  `relaxed tiles vs baseline tiles, ${build.note}; one thread, weights warm, CPU time per call, batches alternated (medians of 21); load ${fmtLoad(load)}`,
);
printTable(['type', 'shape', 'n', 'kernels (base / relaxed)', 'base us', 'relaxed us', 'relaxed/base', 'relaxed GMAC/s', 'bits'], rows);
