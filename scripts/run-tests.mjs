// Runs every compiled test file (dist-test/**/*.test.js, built by tsconfig.test.json) with Node's built-in test
// runner; an argument keeps the files whose path contains it.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function find(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) find(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const files = [...find('dist-test/src'), ...find('dist-test/test')].sort();
const filter = process.argv[2];
const chosen = filter ? files.filter((f) => f.includes(filter)) : files;
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...chosen], { stdio: 'inherit' });
process.exit(r.status ?? 1);
