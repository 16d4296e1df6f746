// bench:browser's Chromium side: a module Worker (bundled by bench/browser.ts) that loads the model over
// HTTP Range and runs the same cases as Node (browser-cases.ts) at each thread count.
import { loadModelFrom, startThreads, urlSource } from '../src/browser.js';
import { kernelBuild } from '../src/kernels/runtime/wasm.js';
import { runPlan, type BenchPlan } from './browser-cases.js';

addEventListener('message', (e) => {
  const { url, name, plan } = (e as MessageEvent<{ url: string; name: string; plan: BenchPlan }>).data;
  const model = loadModelFrom(urlSource(url, name));
  runPlan(model, plan, startThreads).then(
    (rows) => postMessage({ rows, kernels: kernelBuild()?.note ?? 'no wasm kernels' }),
    (err: unknown) => postMessage({ error: err instanceof Error ? err.message : String(err) }),
  );
});
