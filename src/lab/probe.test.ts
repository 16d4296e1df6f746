import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelFromLoaded } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { runProbe, protectLayers } from './probe.js';
import { defaultPrompts } from './prompts.js';

const model = modelFromLoaded(tinyModel('llama'));
const sequences = defaultPrompts(model, { count: 1, length: 40, seedTokens: 4, seed: 1 });

test('probe: ranks every layer, its read-back control passes, the policy protects the top layer', () => {
  const r = runProbe(model, { scheme: 'q4_0', sequences });
  assert.equal(r.layers.length, model.hp.nLayer);
  assert.deepEqual([...r.ranking].sort((a, b) => a - b), [...Array(model.hp.nLayer).keys()]);
  assert.ok(r.controlsPass, JSON.stringify(r.controls.filter((c) => !c.pass)));
  // 2 configurations per layer + all-quantized + reference, each read back.
  assert.equal(r.controls.length, 2 * model.hp.nLayer + 2);
  assert.deepEqual(r.protectedLayers, [r.ranking[0]]);
  assert.deepEqual(r.policy, protectLayers('q4_0', [r.ranking[0]!], 'exact'));
  for (const x of r.layers) assert.ok(x.klOnlyQuantized > 0 && x.klOnlyQuantized < r.klAllQuantized * 1.5 + 1e-9);
});

test('probe: a budget between bare and all-exact protects some layers and stays within it', () => {
  const bare = runProbe(model, { scheme: 'q4_0', sequences, budgetBits: 0 });
  assert.deepEqual(bare.protectedLayers, []);
  const budget = bare.schemeBits + 3;
  const r = runProbe(model, { scheme: 'q4_0', sequences, budgetBits: budget });
  assert.ok(r.protectedLayers.length > 0 && r.protectedLayers.length < model.hp.nLayer);
  assert.ok(r.effectiveBits <= budget);
});

test("probe negative control: a layer secretly kept f32 (seed 002's wrong-layer bug) is caught on that layer", () => {
  // The probe believes layer 2 is quantized in its configurations; the cache is built with layer 2 exact.
  const r = runProbe(model, { scheme: 'q4_0', sequences, actualPolicy: (p) => ({ ...p, layers: { ...p.layers, '2': { k: 'f32', v: 'f32' } } }) });
  assert.equal(r.controlsPass, false);
  const bad = r.controls.filter((c) => !c.pass);
  assert.ok(bad.some((c) => c.config === 'only layer 2 q4_0'), bad.map((c) => c.config).join('; '));
  assert.ok(bad.some((c) => c.config === 'all layers q4_0'));
  // Only layer 2 is flagged: every other layer still reads back as intended.
  for (const c of bad) for (const e of c.layers) if (e.layer !== 2) assert.ok(e.quantizedK ? e.kRelL2 > 1e-3 : e.kExact, `${c.config} layer ${e.layer}`);
});
