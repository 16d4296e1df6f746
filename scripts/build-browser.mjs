// Bundles the browser entry, the pool's Web Worker and the `kvpack web` page into dist/browser/ (ESM,
// esbuild) from the compiled dist/src. Modules with a .browser.js twin are swapped for it (browser-twins.mjs);
// any other Node built-in reached from these entries fails the build, so the bundles cannot depend on one.
// A copy goes to dist-test/browser for the tests' in-process server.
import { build } from 'esbuild';
import { cpSync, mkdirSync } from 'node:fs';
import { browserBuild } from './browser-twins.mjs';

const out = 'dist/browser';
mkdirSync(out, { recursive: true });
await build({
  ...browserBuild,
  entryPoints: {
    kvpack: 'dist/src/browser.js',
    'pool-worker': 'dist/src/kernels/attention/pool-worker-entry.js',
    app: 'dist/src/web/app.js',
    'engine-worker': 'dist/src/web/engine-worker.js',
  },
  outdir: out,
});
cpSync('src/web/page', out, { recursive: true });
// The test build's `kvpack web` server (dist-test/src/web) serves the page from ../../browser, as the package's does.
cpSync(out, 'dist-test/browser', { recursive: true });
console.log(`browser: ${out}/ (kvpack.js, pool-worker.js, the kvpack web page)`);
