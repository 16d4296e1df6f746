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
  assert.deepEqual(
    [...r.ranking].sort((a, b) => a - b),
    [...Array(model.hp.nLayer).keys()],
  );
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
  assert.ok(
    bad.some((c) => c.config === 'only layer 2 q4_0'),
    bad.map((c) => c.config).join('; '),
  );
  assert.ok(bad.some((c) => c.config === 'all layers q4_0'));
  // Only layer 2 is flagged: every other layer still reads back as intended.
  for (const c of bad) for (const e of c.layers) if (e.layer !== 2) assert.ok(e.quantizedK ? e.kRelL2 > 1e-3 : e.kExact, `${c.config} layer ${e.layer}`);
});

test("probe: the budget is measured at the eval's context (positions and prompt), not at its own sequences", async () => {
  const { kvBytes } = await import('../cache/accounting.js');
  const at = { positions: 255, prompt: 156 };
  const r = runProbe(model, { scheme: 'q2k', sequences, protect: 'anchors', anchors: { count: 32, precision: 'f16' }, budgetBits: 64, budgetAt: at });
  assert.equal(r.ctx, 255);
  assert.equal(r.prompt, 156);
  const want = kvBytes({
    ctx: 255,
    prompt: 156,
    layers: model.hp.nLayer,
    kvHeads: model.hp.nHeadKv,
    headDim: model.hp.headDim,
    policy: r.policy,
  }).bitsPerElement;
  assert.equal(r.effectiveBits, want);
  const own = runProbe(model, { scheme: 'q2k', sequences, protect: 'anchors', anchors: { count: 32, precision: 'f16' }, budgetBits: 64 });
  assert.notEqual(own.effectiveBits, r.effectiveBits, 'at 40 positions the same policy costs other bits');
});

test('policy files: eval reads what probe --out writes and a bare CachePolicy; a bad policy names its field', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { readPolicyFile, PROBE_POLICY_KIND } = await import('./policy-file.js');
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-policy-'));
  const policy = protectLayers('q2k', [0], 'anchors');
  writeFileSync(
    join(dir, 'probe.json'),
    JSON.stringify({
      kind: PROBE_POLICY_KIND,
      scheme: 'q2k',
      protect: 'anchors',
      protectedLayers: [0],
      budgetAt: { positions: 255, prompt: 156 },
      budgetBits: 6,
      effectiveBits: 5.9,
      policy,
    }),
  );
  writeFileSync(join(dir, 'bare.json'), JSON.stringify(policy));
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ k: 'q9_9', v: 'f16' }));
  assert.deepEqual(readPolicyFile(join(dir, 'probe.json'), model.hp.nLayer).policy, policy);
  assert.equal(readPolicyFile(join(dir, 'probe.json'), model.hp.nLayer).probe?.protectedLayers[0], 0);
  assert.deepEqual(readPolicyFile(join(dir, 'bare.json'), model.hp.nLayer), { name: 'bare', policy });
  assert.throws(() => readPolicyFile(join(dir, 'bad.json'), model.hp.nLayer), /policy\.k/);
});
