import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, sha256File } from './hash.js';
import { runVariantFile } from './protocol.js';
import { auditRun } from './audit.js';
import { readManifest } from './manifest.js';
import { resolveVariant } from './variant.js';

const MODEL = join(repoRoot(), '..', 'shared', 'models', 'stories260K.bin');
const FROZEN = join(repoRoot(), 'protocols', 'window-sweep.json');

function variantFile(set: Record<string, unknown>): string {
  const f = join(mkdtempSync(join(tmpdir(), 'kvpack-variant-')), 'my.json');
  writeFileSync(f, JSON.stringify({ variantOf: 'window-sweep', set }));
  return f;
}

test('protocol variant: bad files are refused naming the field', () => {
  assert.throws(() => resolveVariant(variantFile({ name: 'x' })), /set.name cannot be changed/);
  assert.throws(() => resolveVariant(variantFile({ horizon: -1 })), /horizon/);
  const f = join(mkdtempSync(join(tmpdir(), 'kvpack-variant-')), 'v.json');
  writeFileSync(f, JSON.stringify({ variantOf: 'nope', set: {} }));
  assert.throws(() => resolveVariant(f), /variantOf/);
});

test('protocol variant: runs, freezes its patch by hash in the manifest, audits PASS, a rewritten patch FAILs; the built-in file is untouched', (t) => {
  if (!existsSync(MODEL)) return void t.skip(`${MODEL} not present`);
  const before = sha256File(FROZEN);
  const f = variantFile({ schemes: ['q4_0'], windows: [0], prompts: { count: 1, length: 40, seedTokens: 4, seed: 1 }, horizon: 12, horizons: [5, 12] });
  const out = join(mkdtempSync(join(tmpdir(), 'kvpack-variant-')), 'run');
  const r = runVariantFile(f, out, { model: MODEL });
  assert.ok(r.pass, r.checks.lines().join('\n'));
  const m = readManifest(out);
  assert.equal(m.protocol.name, 'window-sweep');
  assert.equal((m.protocol.variant as { of: string }).of, 'window-sweep');
  const a = auditRun(out);
  assert.ok(a.pass, a.lines().join('\n'));
  assert.ok(a.checks.some((c) => c.name.startsWith('variant: protocol.json equals the built-in base')));
  // Rewrite the patch and the manifest hashes consistently: only the variant checks can catch it.
  const pj = JSON.parse(readFileSync(join(out, 'protocol.json'), 'utf8'));
  pj.variant.set.horizon = 13;
  writeFileSync(join(out, 'protocol.json'), JSON.stringify(pj, null, 2) + '\n');
  const bad = auditRun(out)
    .checks.filter((c) => !c.pass)
    .map((c) => c.name);
  assert.ok(
    bad.some((n) => n.startsWith('variant:')),
    bad.join('; '),
  );
  assert.equal(sha256File(FROZEN), before);
});
