// esbuild plugin shared by the browser builds: a relative import of x.js resolves to x.browser.js where that
// file exists, which is how the Node-only seams (file paths, cache files, worker_threads) get browser twins.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const browserTwins = {
  name: 'browser-twins',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\/.*\.js$/ }, (args) => {
      const twin = resolve(args.resolveDir, args.path.replace(/\.js$/, '.browser.js'));
      return existsSync(twin) ? { path: twin } : undefined;
    });
  },
};

/** esbuild options every browser bundle shares (ESM, no Node built-ins reachable). */
export const browserBuild = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  plugins: [browserTwins],
  logLevel: 'warning',
};
