// The one default context (defaults.ts): what run, chat, serve and the page size a cache at without -c.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DEFAULT_CTX, defaultCapacity } from './defaults.js';
import { ArgumentError } from '../errors.js';
import { fromRoot } from '../../test/paths.js';
import { sourceFiles } from '../../test/source-files.js';

test('default capacity: the training context capped at 4096, raised to the need, never past the training context', () => {
  assert.equal(DEFAULT_CTX, 4096);
  assert.equal(defaultCapacity(512), 512);
  assert.equal(defaultCapacity(131072), 4096);
  assert.equal(defaultCapacity(131072, 5000), 5000);
  assert.equal(defaultCapacity(512, 100), 512);
  assert.equal(defaultCapacity(512, 512), 512);
  assert.throws(
    () => defaultCapacity(512, 513),
    (e: unknown) => e instanceof ArgumentError && /513 positions .* exceed the model's context of 512; give -c/.test(e.message),
  );
});

test('the default context is declared once: no command or page keeps its own', () => {
  const own = /\b(?:const|let)\s+\w*CTX\w*\s*=\s*\d+|nCtxTrain,\s*4096|4096,\s*\w*\.nCtxTrain/;
  // Negative control: the pattern sees the copies this replaced.
  assert.ok(own.test('const DEFAULT_CTX = 4096;') && own.test('Math.min(model.hp.nCtxTrain, 4096)'));
  const found = sourceFiles('src', false).filter((f) => f !== 'src/cache/defaults.ts' && own.test(readFileSync(fromRoot(f), 'utf8')));
  assert.deepEqual(found, []);
});
