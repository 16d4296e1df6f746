// What ships: the package's files (package.json "files": dist/src, protocols, bin) hold no test-only code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fromRoot } from './paths.js';

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else out.push(p);
  }
  return out;
}

test('src/ (shipped as dist/src) holds no test fixtures or helpers, and no library module imports node:assert or node:test', () => {
  const bad: string[] = [];
  for (const p of files(fromRoot('src'))) {
    const rel = relative(fromRoot(), p);
    if (!rel.endsWith('.ts') || rel.endsWith('.test.ts')) continue;
    if (/fixture|testkit|(^|\/)tiny\.ts$/.test(rel)) bad.push(`${rel}: test-only file`);
    if (/from 'node:(assert|test)/.test(readFileSync(p, 'utf8'))) bad.push(`${rel}: imports node:assert / node:test`);
  }
  assert.deepEqual(bad, []);
});
