// The src/ top-level folders import each other without a cycle: a reader can learn a folder from the ones
// below it. Files at the src/ root are one node each (index.ts and browser.ts import every folder and
// errors.ts is imported by all, so one node for the root would be a cycle of entry point and leaf).
// src/kernels/ is the one home for compute, so its sub-folders (runtime, attention, matmul, ops) are nodes
// of their own: a cycle between them fails as one between top-level folders does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fromRoot } from './paths.js';

/** Known cycles with the reason they stay; empty, and a new entry needs a reason a reviewer accepts. */
const ALLOWED_CYCLES: readonly { cycle: string; reason: string }[] = [];

/** The sub-folders of src/kernels/; a file directly in kernels/ or in another folder fails the layout test. */
const KERNEL_FOLDERS = ['attention', 'matmul', 'ops', 'runtime'];

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Relative specifiers of the static imports, re-exports and dynamic imports in `source`. */
function importSpecifiers(source: string): string[] {
  return [...source.matchAll(IMPORT)].map((m) => (m[1] ?? m[2])!).filter((s) => s.startsWith('.'));
}

/** The node a src-relative path belongs to: its top-level folder (kernels/<sub> under kernels), or the file itself at the root. */
function nodeOf(srcRelative: string): string {
  const parts = srcRelative.split(sep);
  if (parts[0] === 'kernels' && parts.length > 2) return `kernels/${parts[1]}`;
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.js$/, '.ts');
}

function libraryFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) libraryFiles(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/** node -> node -> the import lines that make the edge ("file -> specifier"). */
function folderGraph(src: string): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of libraryFiles(src)) {
    const from = nodeOf(relative(src, file));
    for (const spec of importSpecifiers(readFileSync(file, 'utf8'))) {
      const target = relative(src, resolve(dirname(file), spec));
      if (target.startsWith('..')) continue;
      const to = nodeOf(target);
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      edges.set(to, [...(edges.get(to) ?? []), `${relative(src, file)} -> ${spec}`]);
    }
  }
  return graph;
}

/** Every elementary cycle's node list, each found once from its smallest node (fine for ~20 nodes). */
function cycles(graph: ReadonlyMap<string, ReadonlyMap<string, unknown>>): string[][] {
  const found: string[][] = [];
  const nodes = [...new Set([...graph.keys(), ...[...graph.values()].flatMap((e) => [...e.keys()])])].sort();
  for (const start of nodes) {
    const walk = (node: string, path: string[]): void => {
      for (const next of graph.get(node)?.keys() ?? []) {
        if (next === start) found.push([...path]);
        else if (next > start && !path.includes(next)) walk(next, [...path, next]);
      }
    };
    walk(start, [start]);
  }
  return found;
}

test('layering: import lines are parsed in every form the sources use (negative control for the graph)', () => {
  const source = [
    "import { a } from '../x/a.js';",
    "import type { B } from './b.js';",
    'import {\n  c,\n  d,\n} from "../y/c.js";',
    "export { e } from '../z/e.js';",
    "export * from '../w/f.js';",
    "const g = await import('../v/g.js');",
    "import { readFileSync } from 'node:fs';",
  ].join('\n');
  assert.deepEqual(importSpecifiers(source), ['../x/a.js', './b.js', '../y/c.js', '../z/e.js', '../w/f.js', '../v/g.js']);
});

test('layering: the cycle finder reports a two-folder and a three-folder cycle, and none in a chain', () => {
  const g = (edges: [string, string][]) => {
    const m = new Map<string, Map<string, true>>();
    for (const [a, b] of edges) m.set(a, (m.get(a) ?? new Map()).set(b, true));
    return m;
  };
  assert.deepEqual(
    cycles(
      g([
        ['hf', 'model'],
        ['model', 'hf'],
        ['model', 'gguf'],
      ]),
    ),
    [['hf', 'model']],
  );
  assert.deepEqual(
    cycles(
      g([
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
      ]),
    ),
    [['a', 'b', 'c']],
  );
  assert.deepEqual(
    cycles(
      g([
        ['a', 'b'],
        ['b', 'c'],
        ['a', 'c'],
      ]),
    ),
    [],
  );
});

test('layering: no import cycle between src/ top-level folders', () => {
  const graph = folderGraph(fromRoot('src'));
  // The parse saw the tree: every folder under src/ is a node with at least one edge in or out.
  const folders = readdirSync(fromRoot('src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => (e.name === 'kernels' ? KERNEL_FOLDERS.map((k) => `kernels/${k}`) : [e.name]));
  const touched = new Set([...graph.keys(), ...[...graph.values()].flatMap((e) => [...e.keys()])]);
  assert.deepEqual(
    folders.filter((f) => !touched.has(f)),
    [],
    'folders with no import edge: the parser missed them',
  );
  const allowed = new Set(ALLOWED_CYCLES.map((c) => c.cycle));
  const unexplained = cycles(graph)
    .filter((c) => !allowed.has(c.join(' -> ')))
    .map((c) => {
      const lines = c.map((node, i) => graph.get(node)!.get(c[(i + 1) % c.length]!)![0]);
      return `${[...c, c[0]].join(' -> ')} (e.g. ${lines.join('; ')})`;
    });
  assert.deepEqual(unexplained, [], `import cycles between src/ folders:\n${unexplained.join('\n')}`);
});

test('layering: src/kernels/ holds only its sub-folders, the runtime imports no other kernel folder, and model/ never reaches the runtime', () => {
  const dir = fromRoot('src/kernels');
  const entries = readdirSync(dir, { withFileTypes: true });
  assert.deepEqual(
    entries.filter((e) => !e.isDirectory()).map((e) => e.name),
    [],
    'files directly in src/kernels/',
  );
  assert.deepEqual(entries.map((e) => e.name).sort(), KERNEL_FOLDERS);
  const runtime = folderGraph(fromRoot('src')).get('kernels/runtime') ?? new Map<string, string[]>();
  assert.deepEqual(
    [...runtime.keys()].filter((n) => n.startsWith('kernels/') && n !== 'kernels/runtime'),
    [],
    'kernels/runtime imports another kernel folder',
  );
  // The forward pass calls the kernels' own APIs (a MatmulStep, ArenaBuffers); the pool and the arena stay theirs.
  assert.deepEqual(folderGraph(fromRoot('src')).get('model')?.get('kernels/runtime') ?? [], [], 'model/ imports kernels/runtime');
});
