// DESIGN.md's list of browser twins is the code's: every src/**/x.browser.ts is named there, nothing else is,
// and each twin exports the names its Node module exports (the build swaps one for the other).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fromRoot } from './paths.js';
import { sourceFiles } from './source-files.js';

/** The modules with a browser twin, src-relative without extension (cache/file for src/cache/file.browser.ts). */
const twins = (): string[] =>
  sourceFiles('src')
    .filter((f) => f.endsWith('.browser.ts'))
    .map((f) => f.slice('src/'.length, -'.browser.ts'.length));

/** Names a module exports: `export function|const|class|interface|type X`, and `export { X, type Y } from`. */
function exportsOf(text: string): string[] {
  const names = [...text.matchAll(/^export\s+(?:async\s+)?(?:function|const|class|interface|type)\s+(\w+)/gm)].map((m) => m[1]!);
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm))
    names.push(
      ...m[1]!.split(',').map(
        (x) =>
          x
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)
            .pop()!,
      ),
    );
  return [...new Set(names.filter(Boolean))].sort();
}

test('the browser twins DESIGN.md names are the *.browser.ts files, and each exports what its Node module does', () => {
  const code = twins();
  const design = readFileSync(fromRoot('docs', 'DESIGN.md'), 'utf8');
  const bullet = design.slice(design.indexOf('- Seams:'), design.indexOf('Everything else is shared code.'));
  const named = [...bullet.matchAll(/`([a-z][\w-]*(?:\/[\w-]+)+)`/g)].map((m) => m[1]!).sort();
  assert.ok(code.length >= 6, `found ${code.join(', ')}`);
  assert.deepEqual(named, code, 'docs/DESIGN.md "Seams" bullet vs src/**/*.browser.ts');
  for (const t of code) {
    const node = exportsOf(readFileSync(fromRoot('src', `${t}.ts`), 'utf8'));
    const twin = exportsOf(readFileSync(fromRoot('src', `${t}.browser.ts`), 'utf8'));
    assert.deepEqual(
      node.filter((x) => !twin.includes(x)),
      [],
      `${t}.browser.ts lacks exports of ${t}.ts`,
    );
  }
});
