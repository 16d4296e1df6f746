// Bundles the browser entry, the pool's Web Worker and the `kvpack web` page into dist/browser/ (ESM,
// esbuild) from the compiled dist/src. A module x.js with a sibling x.browser.js is replaced by it: that is
// how the Node-only seams (file paths, cache files, worker_threads) get their browser twins. Any other
// Node built-in reached from these entries fails the build, so the bundles cannot depend on one.
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

const out = 'dist/browser';

/** esbuild plugin: relative imports of x.js resolve to x.browser.js where that file exists. */
const browserTwins = {
  name: 'browser-twins',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\/.*\.js$/ }, (args) => {
      const twin = resolve(args.resolveDir, args.path.replace(/\.js$/, '.browser.js'));
      return existsSync(twin) ? { path: twin } : undefined;
    });
  },
};

mkdirSync(out, { recursive: true });
await build({
  entryPoints: {
    kvpack: 'dist/src/browser.js',
    'pool-worker': 'dist/src/kernels/pool-worker.js',
    app: 'dist/src/web/app.js',
    'engine-worker': 'dist/src/web/engine-worker.js',
  },
  outdir: out,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  plugins: [browserTwins],
  logLevel: 'warning',
});
cpSync('src/web/page', out, { recursive: true });
console.log(`browser: ${out}/ (kvpack.js, pool-worker.js, the kvpack web page)`);
