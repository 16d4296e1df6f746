// `kvpack study --help` tells a user how to point it at their own model and texts; bad invocations are one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
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

test('study: missing -m or --out, or --prompts with --text, is a one-line error (exit 2)', () => {
  for (const args of [
    ['study', '--out', 'x'],
    ['study', '-m', 'm.gguf'],
    ['study', '-m', 'm.gguf', '--out', 'x', '--text', 'a.txt', '--prompts', '3'],
  ]) {
    const r = kvpack(...args);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
