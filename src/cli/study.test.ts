// `kvpack study --help` tells a user how to point it at their own model and texts; bad invocations are one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { repoRoot } from '../lab/hash.js';

const kvpack = (...args: string[]) => spawnSync(process.execPath, [join(repoRoot(), 'bin', 'kvpack.js'), ...args], { encoding: 'utf8' });

test('study --help: own model (.gguf, .bin, HF directory), own texts (--text), the audit', () => {
  const r = kvpack('study', '--help');
  assert.equal(r.status, 0);
  for (const s of [
    'Your own model',
    '--text FILE',
    'Hugging Face',
    '--openings doc',
    'study --audit',
    '--ctx',
    '--prompts',
    '--seed',
    '--questions',
    'UNINFORMATIVE',
  ])
    assert.ok(r.stdout.includes(s), s);
});

test('study: missing -m or --out, --prompts with --text, or a bad --questions file is a one-line error (exit 2)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-study-q-'));
  writeFileSync(join(dir, 'bad.json'), '[{');
  writeFileSync(join(dir, 'no-answers.json'), '[{"prompt": "Once upon a"}]');
  for (const args of [
    ['study', '--out', 'x'],
    ['study', '-m', 'm.gguf'],
    ['study', '-m', 'm.gguf', '--out', 'x', '--text', 'a.txt', '--prompts', '3'],
    ['study', '-m', 'm.gguf', '--out', 'x', '--questions', join(dir, 'bad.json')],
    ['study', '-m', 'm.gguf', '--out', 'x', '--questions', join(dir, 'no-answers.json')],
  ]) {
    const r = kvpack(...args);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  // A missing file is an I/O error (exit 1), still one line naming the flag.
  const r = kvpack('study', '-m', 'm.gguf', '--out', 'x', '--questions', join(dir, 'missing.json'));
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr.trim(), /^kvpack: --questions file .*missing\.json.*$/);
});
