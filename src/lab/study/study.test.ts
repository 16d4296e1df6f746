// kvpack study on a small real model at a tiny size: runs, audits PASS, and the audit catches an edited
// number, an edited report and a forged negative control even when the forger rewrites every manifest hash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { repoRoot, sha256File } from '../hash.js';
import { auditRun } from '../audit.js';
import { runStudy } from './study.js';

const MODEL = join(repoRoot(), '..', 'shared', 'models', 'stories260K.gguf');

/** Every manifest under dir (deepest first) rewritten to the files as they are now: a forger's best effort. */
function rehashAll(dir: string): void {
  const manifests: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n === 'manifest.json') manifests.push(p);
    }
  };
  walk(dir);
  manifests.sort((a, b) => b.split(sep).length - a.split(sep).length);
  for (const m of manifests) {
    const root = join(m, '..');
    const j = JSON.parse(readFileSync(m, 'utf8')) as { files: Record<string, { bytes: number; sha256: string }> };
    for (const rel of Object.keys(j.files)) {
      const p = join(root, rel);
      j.files[rel] = { ...j.files[rel]!, bytes: statSync(p).size, sha256: sha256File(p) };
    }
    writeFileSync(m, JSON.stringify(j, null, 2) + '\n');
  }
}

let cached: string | undefined;
function study(): string {
  if (cached) return cached;
  const out = join(mkdtempSync(join(tmpdir(), 'kvpack-study-')), 'run');
  const questions = [
    { id: 'sky', prompt: 'The bird flew up into the', answers: ['sky'] },
    { id: 'time', prompt: 'Once upon a', answers: ['time'] },
  ];
  const r = runStudy({ model: MODEL, out, ctx: 48, prompts: 2, parts: ['live-cache'], questions: { list: questions, file: 'q.json', sha256: 'x'.repeat(64) } });
  assert.ok(r.pass, r.runs.map((x) => x.result.checks.lines().join('\n')).join('\n'));
  cached = out;
  return out;
}

/** A copy to tamper with (the shared run stays intact for the other tests). */
function copyOf(dir: string): string {
  const to = join(mkdtempSync(join(tmpdir(), 'kvpack-study-copy-')), 'run');
  cpSync(dir, to, { recursive: true });
  return to;
}

test('study: a tiny run names the model, audits PASS, and its negative controls fail where they must', (t) => {
  if (!existsSync(MODEL)) return void t.skip(`${MODEL} not present`);
  const dir = study();
  const a = auditRun(dir);
  assert.ok(a.pass, a.lines().join('\n'));
  const md = readFileSync(join(dir, 'report.md'), 'utf8');
  assert.match(md, new RegExp(`sha256 \`${sha256File(MODEL)}\``));
  assert.match(md, /cache destroyed at read time .*\| FAIL \|.*\| attention read-back \| yes \|/);
  assert.match(md, /anchors on the wrong layers .*\| FAIL \| anchor placement \| yes \|/);
  assert.ok(
    a.checks.some((c) => c.name.includes('variant: protocol.json equals the built-in base')),
    'the part is a variant of the built-in',
  );
  assert.match(md, /short-answer probe and loops .*q\.json/);
  assert.match(md, /\| f16 \| \d\/2 \[\d+, \d+\]% \| 2\/2 \[100, 100\]% \| \d\/2 \| 16\.00 \|/);
  assert.match(md, /PASS equal bytes: every equal-bytes arm's measured bytes per cell/);
  assert.match(md, /\| kivi2\+w\d+ \| int2c_g32 \| int2_g32 \| \d+ \+ 0 sinks \| yes \|/);
});

for (const [what, rel, edit] of [
  [
    'an edited number in results.json',
    'live-cache/results.json',
    (s: string) => s.replace(/"klPrompt": ([0-9.e-]+)/g, (_m, x: string) => `"klPrompt": ${Number(x) * 0.5}`),
  ],
  ['an edited report.md', 'report.md', (s: string) => s.replace('| q2k |', '| q2k (best) |')],
  ['an edited memory table', 'memory.json', (s: string) => s.replace(/"bareBits": ([0-9.]+)/, '"bareBits": 1.5')],
  ['a dropped short-answer record', 'short-answers/records.json', (s: string) => JSON.stringify(JSON.parse(s).slice(1))],
  [
    'a forged negative control (the destroyed cache marked as reading fine)',
    'negative-controls/records.json',
    (s: string) => s.replace(/"readRelRms": [0-9.e+-]+/g, '"readRelRms": 0'),
  ],
] as const) {
  test(`study audit: ${what} FAILs even with every manifest hash rewritten`, (t) => {
    if (!existsSync(MODEL)) return void t.skip(`${MODEL} not present`);
    const dir = copyOf(study());
    const p = join(dir, rel);
    const before = readFileSync(p, 'utf8');
    const after = edit(before);
    assert.notEqual(after, before, 'the edit changed the file');
    writeFileSync(p, after);
    rehashAll(dir);
    const a = auditRun(dir);
    assert.equal(a.pass, false, `audit still PASSes after ${what}`);
    assert.ok(
      a.checks.filter((c) => !c.pass).every((c) => !c.name.startsWith('every file matches')),
      'caught by recomputation, not by a hash',
    );
  });
}
