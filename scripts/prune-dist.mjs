// Removes compiled files whose TypeScript source is gone (a renamed or deleted module, or a test compiled into
// dist/ before tests got their own build), so neither the package (dist/) nor the test run (dist-test/) holds a
// stale module. tsc never deletes outputs itself. Usage: node scripts/prune-dist.mjs dist|dist-test
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const out = process.argv[2];
/** Source folders each output tree compiles (tsconfig.json / tsconfig.test.json "include"). */
const TREES = { dist: ['src'], 'dist-test': ['src', 'test', 'bench'] };
if (!(out in TREES)) throw new Error(`prune-dist: expected dist or dist-test, got '${out}'`);
const product = out === 'dist';

function walk(dir, each) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, each);
    else each(p);
  }
}

let removed = 0;
for (const top of existsSync(out) ? readdirSync(out) : []) {
  const p = join(out, top);
  if (!statSync(p).isDirectory() || top === 'browser') continue;
  if (!TREES[out].includes(top)) {
    rmSync(p, { recursive: true, force: true });
    removed++;
    continue;
  }
  walk(p, (file) => {
    const rel = relative(out, file);
    const m = /^(.*)\.(js|js\.map|d\.ts)$/.exec(rel);
    if (!m) return;
    const src = `${m[1]}.ts`;
    if (!existsSync(src) || (product && src.endsWith('.test.ts'))) {
      rmSync(file);
      removed++;
    }
  });
}
if (removed) console.log(`prune-dist: removed ${removed} stale file(s) or folder(s) from ${out}/`);
