// The manifest's source tree is the code that runs: dist/src in an installed package (which has no src/),
// the compiled modules in a checkout, the .ts files under tsx; plus the frozen protocols.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeRoot, repoRoot, sha256, sourceListing } from './hash.js';

test('an installed package (dist/src, protocols, no src/) hashes its dist/src modules and protocols', () => {
  const root = mkdtempSync(join(tmpdir(), 'kvpack-installed-'));
  try {
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'kvpack' }));
    mkdirSync(join(root, 'dist', 'src', 'lab'), { recursive: true });
    mkdirSync(join(root, 'protocols'));
    writeFileSync(join(root, 'dist', 'src', 'index.js'), 'export {};\n');
    writeFileSync(join(root, 'dist', 'src', 'lab', 'hash.js'), 'export const x = 1;\r\n');
    writeFileSync(join(root, 'dist', 'src', 'lab', 'hash.d.ts'), 'export declare const x: number;\n');
    writeFileSync(join(root, 'protocols', 'p.json'), '{}\n');
    const rows = sourceListing(root, join(root, 'dist', 'src'))
      .trim()
      .split('\n');
    assert.deepEqual(
      rows.map((r) => r.slice(66)),
      ['dist/src/index.js', 'dist/src/lab/hash.js', 'protocols/p.json'],
    );
    assert.equal(rows[1]!.slice(0, 64), sha256('export const x = 1;\n'), 'LF-normalized');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('by default the listing holds the modules this process runs', () => {
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  const running = relative(repoRoot(), fileURLToPath(new URL(`./hash.${ext}`, import.meta.url)))
    .split(sep)
    .join('/');
  assert.equal(codeRoot(), fileURLToPath(new URL('../', import.meta.url)).replace(/[\\/]$/, ''));
  const listed = sourceListing()
    .split('\n')
    .map((r) => r.slice(66));
  assert.ok(listed.includes(running), `${running} missing from the listing`);
  assert.ok(listed.some((p) => p.startsWith('protocols/')));
  assert.ok(!listed.some((p) => /\.test\.(js|ts)$/.test(p)), 'tests do not run in a lab run');
});
