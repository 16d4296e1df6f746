import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProtocol } from '../protocol.js';
import { auditRun } from '../audit.js';
import { OutputExistsError } from '../manifest.js';
import { parseResidualWindow, inputsOf, type ResidualWindowSpec } from './residual-window-core.js';
import { runResidualWindow } from './residual-window.js';
import { readWindowCache } from '../window-cache.js';

// Tiny version: one seed, N=128 only (so seed 003's byte figures are checked), one timing rep.
function tiny(): { spec: ResidualWindowSpec; bytes: Uint8Array } {
  const frozen = JSON.parse(Buffer.from(loadProtocol('residual-window').bytes).toString('utf8')) as Record<string, unknown>;
  const json = { ...frozen, seeds: [1], lengths: [128], timing: { reps: 1 } };
  return { spec: parseResidualWindow(json), bytes: Buffer.from(JSON.stringify(json, null, 2)) };
}
const tmp = () => mkdtempSync(join(tmpdir(), 'kvpack-rw-'));
const failed = (dir: string) =>
  auditRun(dir)
    .checks.filter((c) => !c.pass)
    .map((c) => c.name);

test('the frozen protocol is seed 003: 18 inputs x 3 windows = 54 comparisons', () => {
  const spec = loadProtocol('residual-window').spec as ResidualWindowSpec;
  assert.equal(inputsOf(spec).length, 18);
  assert.deepEqual(spec.windows, [0, 16, 64]);
  assert.deepEqual(spec.formats, { k: 'int4c_g32', v: 'int4_g32', window: 'f32' });
});

test('tiny run passes its controls, reproduces 5,136 / 8,912 / 18,960 B, and audits PASS', () => {
  const { spec, bytes } = tiny();
  const out = join(tmp(), 'run');
  const r = runResidualWindow(spec, bytes, out);
  assert.ok(r.pass, r.checks.lines().join('\n'));
  assert.ok(r.checks.checks.some((c) => c.name.startsWith('bytes: seed 003 figures') && c.pass));
  // R=0 keeps nothing in the window (no x[-0:] slip): the bulk holds all 128 tokens.
  const c0 = readWindowCache(spec.formats, new Uint8Array(readFileSync(join(out, 'caches/clean_s1_n128_r0.kvc'))));
  assert.equal(c0.bulkTokens, 128);
  assert.equal(c0.windowTokens, 0);
  const a = auditRun(out);
  assert.ok(a.pass, a.lines().join('\n'));
  assert.ok(a.checks.length > 15);
});

test('flipping one byte of an output makes the audit FAIL', () => {
  const { spec, bytes } = tiny();
  const out = join(tmp(), 'run');
  runResidualWindow(spec, bytes, out);
  const p = join(out, 'caches/recent_focus_s1_n128_r16.kvc');
  const b = readFileSync(p);
  b[100]! ^= 0x01;
  writeFileSync(p, b);
  const bad = failed(out);
  assert.ok(bad.includes('every file matches its manifest sha256 and size'), bad.join('; '));
  assert.ok(
    bad.some((n) => n.startsWith('caches: re-encoding')),
    bad.join('; '),
  );
});

test('editing a manifest entry makes the audit FAIL', () => {
  const { spec, bytes } = tiny();
  const out = join(tmp(), 'run');
  runResidualWindow(spec, bytes, out);
  const mp = join(out, 'manifest.json');
  const m = JSON.parse(readFileSync(mp, 'utf8'));
  m.environment.cpuModel = 'a faster cpu';
  writeFileSync(mp, JSON.stringify(m, null, 2) + '\n');
  // Only that entry fails.
  assert.deepEqual(failed(out), ['manifest environment matches environment.json']);
  // A results entry rewritten together with its manifest hash still fails the recomputation.
  const rp = join(out, 'results.json');
  const rows = JSON.parse(readFileSync(rp, 'utf8'));
  rows[0].relL2 *= 0.5;
  writeFileSync(rp, JSON.stringify(rows, null, 2) + '\n');
  const bad = failed(out);
  assert.ok(bad.includes('results: every number recomputed from the saved files'), bad.join('; '));
});

test('a run refuses an existing output directory and leaves it untouched', () => {
  const { spec, bytes } = tiny();
  const dir = tmp();
  writeFileSync(join(dir, 'keep.txt'), 'x');
  assert.throws(() => runResidualWindow(spec, bytes, dir), OutputExistsError);
  assert.deepEqual(readdirSync(dir), ['keep.txt']);
});

test('negative control: secretly storing the bulk as f32 fires the controls, and the audit FAILs', () => {
  const { spec, bytes } = tiny();
  const out = join(tmp(), 'run');
  const r = runResidualWindow(spec, bytes, out, { sabotageDisableQuantization: true });
  assert.equal(r.pass, false);
  const bad = r.checks.checks.filter((c) => !c.pass).map((c) => c.name);
  assert.ok(
    bad.some((n) => n.startsWith('control: attention relL2 >')),
    bad.join('; '),
  );
  assert.ok(
    bad.some((n) => n.startsWith('control: bulk K and V relL2 >')),
    bad.join('; '),
  );
  assert.ok(existsSync(join(out, 'manifest.json')));
  assert.equal(auditRun(out).pass, false);
});
