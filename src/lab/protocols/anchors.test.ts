import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../hash.js';
import { loadProtocol } from '../protocol.js';
import { readFileSync } from 'node:fs';
import { runAndTamper, runTiny, sabotagedWith } from '../../../test/fixtures/model-runs.js';

const SMALL: Record<string, unknown> & { prompts: object } = {
  schemes: ['q4_0'],
  sweeps: [{ counts: [0, 4], precisions: ['f16', 'int8'], layerSets: ['all', 'probe', 'layer0'] }],
  probe: { layers: 1, sequences: { count: 1, length: 40, seedTokens: 4, seed: 7, set: 'calibration' } },
  prompts: { count: 1, length: 24, seedTokens: 4, seed: 2 },
  horizon: 12,
  horizons: [5, 12],
};

test('anchors: tiny run (probe-chosen layers included) passes, audits PASS, a flipped byte FAILs', (t) => runAndTamper(t, 'anchors', SMALL));

test('anchors negative control: a probe reading the evaluation set (seed 002 forbids it) fails the distinctness check', (t) => {
  const model = join(repoRoot(), '..', 'shared', 'models', 'stories260K.bin');
  if (!existsSync(model)) return void t.skip(`${model} not present`);
  const { protocol, bytes } = loadProtocol('anchors');
  const probe = { layers: 1, sequences: { ...SMALL.prompts, set: 'heldout' } };
  const json = {
    ...(JSON.parse(Buffer.from(bytes).toString('utf8')) as object),
    ...SMALL,
    sweeps: [{ counts: [4], precisions: ['f16'], layerSets: ['probe'] }],
    probe,
  };
  const r = protocol.run(protocol.parse(json), Buffer.from(JSON.stringify(json)), join(mkdtempSync(join(tmpdir(), 'kvpack-anchors-')), 'run'), { model });
  const bad = r.checks.checks.filter((c) => !c.pass).map((c) => c.name);
  assert.deepEqual(bad, ['probe: its calibration sequences share no opening (story text) or leading ids with the evaluation prompts']);
});

const ANCHORED = { ...SMALL, sweeps: [{ counts: [4], precisions: ['f16'], layerSets: ['layer0'] }] };
test('anchors negative control: anchors built on the wrong layers fail the placement check (seed 002 retraction)', (t) => {
  sabotagedWith(t, 'anchors', ANCHORED, { wrongAnchorLayers: true }, 'anchors: every anchored arm holds anchors on exactly the layers');
});
test('anchors negative control: anchors silently dropped fail the placement check', (t) => {
  sabotagedWith(t, 'anchors', ANCHORED, { dropAnchors: true }, 'anchors: every anchored arm holds anchors on exactly the layers');
});

test('anchors: the prompt-protection mode runs beside decode-only anchors; its bits grow with prefill, decode-only ones do not', (t) => {
  const dir = runTiny(t, 'anchors', { ...SMALL, sweeps: [{ counts: [4], precisions: ['f16'], layerSets: ['layer0'], modes: ['decode', 'prompt'] }] });
  if (!dir) return;
  const head = readFileSync(join(dir, 'headline.md'), 'utf8');
  const row = (name: string) =>
    head
      .split('\n')
      .find((l) => l.startsWith(`| ${name} |`))!
      .split('|')
      .slice(2, -1)
      .map(Number);
  const p = row('q4_0/p4-f16-layer0');
  const d = row('q4_0/a4-f16-layer0');
  assert.ok(
    p.every((x, i) => i === 0 || x > p[i - 1]!),
    `prompt protection grows: ${p}`,
  );
  assert.ok(
    d.every((x, i) => i === 0 || x <= d[i - 1]! + 1e-9),
    `decode-only does not: ${d}`,
  );
});
