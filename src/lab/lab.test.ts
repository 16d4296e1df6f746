import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLab, defaultLabDir } from './lab.js';
import { auditRun } from './audit.js';
import { OutputExistsError } from './manifest.js';

test('kvpack lab: every synthetic protocol, a self-contained report, an audit that PASSes', () => {
  const base = mkdtempSync(join(tmpdir(), 'kvpack-lab-'));
  const out = join(base, 'lab');
  const r = runLab({ out });
  assert.ok(r.pass);
  assert.deepEqual(
    r.runs.map((x) => x.name),
    ['residual-window', 'bit-allocation'],
  );
  assert.deepEqual(
    r.skipped.map((x) => x.name),
    ['window-sweep', 'anchors', 'needles', 'live-cache'],
  );
  const html = readFileSync(join(out, 'report.html'), 'utf8');
  assert.equal((html.match(/<svg /g) ?? []).length, 4);
  // No external assets: no scripts, stylesheets or images fetched from anywhere.
  assert.ok(!/<script|<link|<img|src=|url\(/.test(html));
  assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /\| 128 \| 16 \| 8,912 B \|/);
  assert.deepEqual(readdirSync(base), ['lab']); // no partial directory left behind
  const a = auditRun(out);
  assert.ok(a.pass, a.lines().join('\n'));
  // Tampering with the rendered report is caught too.
  writeFileSync(join(out, 'report.md'), readFileSync(join(out, 'report.md'), 'utf8').replace('8,912', '8,000'));
  assert.equal(auditRun(out).pass, false);
  assert.throws(() => runLab({ out }), OutputExistsError);
});

test('the default lab directory is new and timestamped', () => {
  const base = mkdtempSync(join(tmpdir(), 'kvpack-lab-'));
  const now = new Date('2026-01-02T03:04:05.678Z');
  const a = defaultLabDir(base, now);
  assert.match(a, /2026-01-02_03-04-05-678$/);
  writeFileSync(a, '');
  assert.match(defaultLabDir(base, now), /2026-01-02_03-04-05-678-2$/);
});
