// What ships: `npm pack` lists the product only. No test file, no module only tests reach (every packed module
// is reachable from an entry point: package.json main/exports/bin, the browser bundles' entries), no import
// that leaves the package, and no browser bundle that carries code from test/ or bench/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { fromRoot } from './paths.js';

/** Relative module references in compiled JS: import/export from, import(), side-effect import, new URL(). */
const REFS = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
/** esbuild's per-module comments in a bundle ("// dist/src/x.js"): none may come from tests or benches. */
const BUNDLED_TEST = /^\/\/ (?:dist\/(?:test|bench)\/|dist-test\/|test\/|bench\/)\S+/m;

/** A module whose JS is empty once its types are erased (`export {};`): reached by `import type`, which leaves no trace. */
const typesOnly = (js: string) =>
  js
    .replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')
    .replace(/export\s*\{\s*\};?/, '')
    .trim() === '';

interface PackInput {
  /** Packed paths, posix, relative to the package root. */
  files: readonly string[];
  /** Entry modules (packed paths). */
  entries: readonly string[];
  read: (path: string) => string;
}

/** Everything wrong with a package listing; [] when it holds the product only. */
function packProblems(p: PackInput): string[] {
  const bad: string[] = [];
  const packed = new Set(p.files);
  for (const f of p.files) {
    if (/\.test\.|(^|\/)(fixtures?|testkit)(\/|\.)/.test(f)) bad.push(`${f}: a test file`);
    else if (/^(test|bench|dist-test|dist\/test|dist\/bench)\//.test(f)) bad.push(`${f}: outside the product tree`);
  }
  const js = p.files.filter((f) => /\.m?js$/.test(f));
  // The graph runs over modules and declarations: a types-only module (its JS is `export {}`) is reached through
  // the .d.ts files that import it. A .browser.js twin is reached with its Node module (the bundler swaps it in).
  const reached = new Set<string>();
  const queue = p.entries.filter((e) => packed.has(e));
  for (const e of p.entries) if (!packed.has(e)) bad.push(`${e}: entry point not packed`);
  const visit = (f: string) => {
    for (const g of [f, f.replace(/\.js$/, '.d.ts'), f.replace(/\.js$/, '.browser.js')]) if (packed.has(g) && !reached.has(g)) queue.push(g);
  };
  while (queue.length) {
    const f = queue.pop()!;
    if (reached.has(f)) continue;
    reached.add(f);
    for (const m of p.read(f).matchAll(REFS)) {
      const to = posix.normalize(posix.join(posix.dirname(f), m[1]!));
      if (to.endsWith('/') ? !p.files.some((x) => x.startsWith(to)) : !packed.has(to)) bad.push(`${f}: imports ${m[1]}, which is not in the package`);
      else if (/\.m?js$/.test(to)) visit(to);
    }
    if (f.endsWith('.js')) visit(f);
  }
  for (const f of js) {
    if (!reached.has(f) && !reached.has(f.replace(/\.js$/, '.d.ts')) && !typesOnly(p.read(f)))
      bad.push(`${f}: no entry point reaches it (test-only or dead module)`);
    if (f.startsWith('dist/browser/') && BUNDLED_TEST.test(p.read(f))) bad.push(`${f}: bundles ${BUNDLED_TEST.exec(p.read(f))![0].slice(3)}`);
  }
  return bad;
}

/** The package's entry modules: bin scripts (and what they import), main, exports, the browser bundles' entries. */
function entries(): string[] {
  const pkg = JSON.parse(readFileSync(fromRoot('package.json'), 'utf8')) as { main: string; types: string; bin: Record<string, string>; exports: unknown };
  const out = new Set<string>([pkg.main, pkg.types, ...Object.values(pkg.bin)]);
  const walk = (x: unknown): void => {
    if (typeof x === 'string') {
      if (/\.(m?js|d\.ts)$/.test(x)) out.add(posix.normalize(x));
    } else if (x && typeof x === 'object') Object.values(x).forEach(walk);
  };
  walk(pkg.exports);
  // scripts/build-browser.mjs bundles these modules into dist/browser: they ship as the bundles' sources, and
  // each bundle is an entry of its own (the page loads them by URL).
  for (const m of readFileSync(fromRoot('scripts', 'build-browser.mjs'), 'utf8').matchAll(/'(dist\/src\/[^']+\.js)'/g)) out.add(m[1]!);
  for (const f of readdirSync(fromRoot('dist', 'browser'))) if (f.endsWith('.js')) out.add(`dist/browser/${f}`);
  return [...out].map((e) => posix.normalize(e));
}

test('npm pack lists no test file, no test-only or dead module, no import out of the package, no bundled test code', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: fromRoot(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    shell: process.platform === 'win32',
  });
  const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/src/index.js') && files.includes('dist/browser/kvpack.js'), 'the product build is packed');
  assert.deepEqual(packProblems({ files, entries: entries(), read: (f) => readFileSync(fromRoot(f), 'utf8') }), []);
});

test('the package check catches each kind of problem (negative controls)', () => {
  const src: Record<string, string> = {
    'bin/k.js': "import { main } from '../dist/src/main.js';",
    'dist/src/main.js': "import './a.js'; const w = new URL('./w.js', import.meta.url);",
    'dist/src/a.js': "export { g } from '../test/parity/gate.js';",
    'dist/src/w.js': '',
    'dist/src/a.test.js': 'test();',
    'dist/src/dead.js': 'export const x = 1;',
    'dist/browser/b.js': '// dist/test/parity/gate.js\nvar x = 1;',
    'test/paths.js': 'export const p = 1;',
  };
  const bad = packProblems({ files: Object.keys(src), entries: ['bin/k.js', 'dist/browser/b.js'], read: (f) => src[f]! });
  assert.deepEqual(bad.sort(), [
    'dist/browser/b.js: bundles dist/test/parity/gate.js',
    'dist/src/a.js: imports ../test/parity/gate.js, which is not in the package',
    'dist/src/a.test.js: a test file',
    'dist/src/a.test.js: no entry point reaches it (test-only or dead module)',
    'dist/src/dead.js: no entry point reaches it (test-only or dead module)',
    'test/paths.js: no entry point reaches it (test-only or dead module)',
    'test/paths.js: outside the product tree',
  ]);
  // The clean part alone passes, a types-only module reached through its .d.ts too: the check does not fail on everything.
  const ok: Record<string, string> = {
    'bin/k.js': src['bin/k.js']!,
    'dist/src/main.js': "new URL('./w.js', import.meta.url);",
    'dist/src/main.d.ts': "import type { T } from './t.js';",
    'dist/src/w.js': '',
    'dist/src/t.js': 'export {};',
    'dist/src/t.d.ts': '',
  };
  assert.deepEqual(packProblems({ files: Object.keys(ok), entries: ['bin/k.js'], read: (f) => ok[f]! }), []);
});

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else out.push(p);
  }
  return out;
}

test('src/ (the product sources) holds no test fixtures or helpers, and no library module imports node:assert or node:test', () => {
  const bad: string[] = [];
  for (const p of files(fromRoot('src'))) {
    const rel = relative(fromRoot(), p);
    if (!rel.endsWith('.ts') || rel.endsWith('.test.ts')) continue;
    if (/fixture|testkit|(^|\/)tiny\.ts$/.test(rel)) bad.push(`${rel}: test-only file`);
    if (/from 'node:(assert|test)/.test(readFileSync(p, 'utf8'))) bad.push(`${rel}: imports node:assert / node:test`);
    if (/from '(\.\.\/)+(test|bench)\//.test(readFileSync(p, 'utf8'))) bad.push(`${rel}: imports from test/ or bench/`);
  }
  assert.deepEqual(bad, []);
});

test('package.json scripts run tests and benches from the test build (dist-test/), never a dist/ path the product build no longer writes', () => {
  const { scripts } = JSON.parse(readFileSync(fromRoot('package.json'), 'utf8')) as { scripts: Record<string, string> };
  const stale = Object.entries(scripts)
    .filter(([, cmd]) => /\bdist\/(test|bench)\//.test(cmd))
    .map(([name, cmd]) => `${name}: ${cmd}`);
  assert.deepEqual(stale, []);
  assert.ok(
    Object.values(scripts).some((cmd) => cmd.includes('dist-test/bench/')),
    'the benches run from dist-test/',
  );
});
