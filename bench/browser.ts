// npm run bench:browser: decode tokens/s and attention throughput in Chromium (the kvpack web page's
// engine, Web Worker threads over the shared arena) vs Node (worker_threads), same model, same cache code,
// 1 and N threads; prints both and the Chromium/Node ratio from one run (Node first, then Chromium).
// Flags: --model PATH (default ../shared/models/tinystories-656k.gguf), --synthetic (bench:engine's q8_0
// dim-768 llama instead), --tokens N, --positions N, --threads N, --rounds N, --quick.
// Kernel builds: each engine picks the relaxed-SIMD or the baseline build itself (src/kernels/runtime/relaxed.ts);
// the run prints which each one ran.
import { existsSync, rmSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { build } from 'esbuild';
import { loadModel } from '../src/model/model.js';
import { configureMatmul } from '../src/kernels/matmul/config.js';
import { availableCores } from '../src/kernels/runtime/threads.js';
import { setThreads } from '../src/kernels/runtime/pool.js';
import { startWebServer } from '../src/web/server.js';
import { chromiumMissing, launchChromium } from '../test/browser/harness.js';
import { fromRoot } from '../test/paths.js';
import { runPlan, type BenchPlan, type Row } from './browser-cases.js';
import { syntheticModel } from './engine.js';
import { declareOptions, flag, option, printTable } from './harness.js';
import { kernelBuild } from '../src/kernels/runtime/wasm.js';

declareOptions('bench:browser', 'decode and attention in Node and in a Chromium Worker, same cases', {
  '--model': { kind: 'str', help: 'GGUF to decode', default: '../shared/models/tinystories-656k.gguf' },
  '--synthetic': { kind: 'switch', help: "the bench's synthetic q8_0 model instead of --model" },
  '--quick': { kind: 'switch', help: 'fewer tokens, rounds and positions' },
  '--threads': { kind: 'int', min: 1, help: 'the thread count beside 1', default: 'available cores' },
  '--tokens': { kind: 'int', min: 1, help: 'decode tokens', default: '200 (64 --quick, 16 --synthetic)' },
  '--rounds': { kind: 'int', min: 1, help: 'rounds', default: '3 (2 --quick)' },
  '--positions': { kind: 'int', min: 1, help: 'attention positions', default: '16384 (4096 --quick)' },
});

const log = (s: string) => console.log(s);
const num = (name: string, dflt: number) => (option(name) === undefined ? dflt : Number(option(name)));

async function main(): Promise<void> {
  const missing = chromiumMissing();
  if (missing) {
    console.log(`bench:browser: ${missing}`);
    process.exitCode = 2;
    return;
  }
  const path = flag('--synthetic') ? syntheticModel('q8_0', log) : (option('--model') ?? fromRoot('..', 'shared', 'models', 'tinystories-656k.gguf'));
  if (!existsSync(path)) throw new Error(`no model at ${path} (--model PATH or --synthetic)`);
  const quick = flag('--quick');
  const n = num('--threads', availableCores());
  const plan: BenchPlan = {
    threads: n > 1 ? [1, n] : [1],
    decodeSchemes: ['f16', 'q2k'],
    decodeTokens: num('--tokens', flag('--synthetic') ? 16 : quick ? 64 : 200),
    rounds: num('--rounds', quick ? 2 : 3),
    attendSchemes: ['f16', 'q4_0', 'q2k'],
    positions: num('--positions', quick ? 4096 : 16384),
    budgetS: quick ? 0.2 : 0.5,
  };
  log(`model ${path}; threads ${plan.threads.join(', ')}; Node ${process.version}`);

  log('Node ...');
  const model = loadModel(path);
  const nodeRows = await runPlan(model, plan, async (t) => {
    configureMatmul({ threads: t });
    setThreads(t);
    return Math.min(t, availableCores());
  });

  // The bench Worker and its pool worker, next to each other under the page root the server sends.
  const out = fromRoot('dist-test', 'browser', 'bench');
  const { browserBuild } = (await import(fromRoot('scripts', 'browser-twins.mjs'))) as { browserBuild: object };
  await build({
    ...browserBuild,
    entryPoints: { worker: fromRoot('dist-test', 'bench', 'browser-worker.js'), 'pool-worker': fromRoot('dist-test', 'src', 'kernels', 'pool-worker.js') },
    outdir: out,
  });
  const server = await startWebServer({ port: 0, host: '127.0.0.1', models: dirname(path) });
  const browser = await launchChromium();
  let browserRows: Row[];
  let relaxed = '';
  try {
    log(`Chromium ${browser.version()} ...`);
    const page = await browser.newPage();
    await page.goto(server.url);
    const r = await page.evaluate(
      ([url, name, p]) =>
        new Promise<{ rows?: Row[]; kernels?: string; error?: string }>((resolve) => {
          const w = new Worker('bench/worker.js', { type: 'module' });
          w.onmessage = (e) => resolve(e.data as { rows?: Row[]; kernels?: string; error?: string });
          w.onerror = (e) => resolve({ error: e.message });
          w.postMessage({ url, name, plan: p });
        }),
      [`/models/${encodeURIComponent(basename(path))}`, basename(path), plan] as const,
    );
    if (!r.rows) throw new Error(`browser bench failed: ${r.error}`);
    browserRows = r.rows;
    relaxed = `kernels: Node ${kernelBuild()?.note ?? 'none'}, Chromium ${r.kernels}`;
  } finally {
    await browser.close();
    await server.close();
    rmSync(out, { recursive: true, force: true }); // the page root keeps only the page
  }

  const key = (r: Row) => `${r.kind} ${r.scheme}`;
  const keys = [...new Set(nodeRows.map(key))];
  const cell = (rows: Row[], k: string, t: number) => rows.find((r) => key(r) === k && r.threads === t);
  const headers = ['case', 'unit'];
  for (const t of plan.threads) headers.push(`Node ${t}T`, `Chromium ${t}T`, `ratio ${t}T`);
  const rows = keys.map((k) => {
    const row = [k, k.startsWith('decode') ? 'tok/s' : 'M pos*head/s'];
    for (const t of plan.threads) {
      const a = cell(nodeRows, k, t);
      const b = cell(browserRows, k, t) ?? cell(browserRows, k, 1);
      row.push(
        a ? a.value.toFixed(1) : '-',
        b ? `${b.value.toFixed(1)}${b.threads !== t ? ` (${b.threads}T)` : ''}` : '-',
        a && b ? (b.value / a.value).toFixed(2) : '-',
      );
    }
    return row;
  });
  console.log('');
  printTable(headers, rows);
  console.log('');
  for (const [who, rs] of [
    ['Node', nodeRows],
    ['Chromium', browserRows],
  ] as const)
    for (const r of rs) console.log(`${who} ${r.threads}T ${key(r)}: ${r.detail}`);
  console.log(`ratio = Chromium / Node (same code, same machine, one run each); ${relaxed}.`);
}

await main();
