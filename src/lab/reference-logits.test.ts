import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelFromLoaded } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { loadOrComputeReference, modelSha256, readReference, REFERENCE_POLICY, type ReferenceKey } from './reference-logits.js';
import { runArm, scoreArm } from './eval.js';
import { schemePolicy } from '../cache/schemes.js';

const model = modelFromLoaded(tinyModel('llama'));
const spec: ReferenceKey = { model: 'tiny-llama', policy: REFERENCE_POLICY, horizon: 6, prompts: [{ id: 'a', tokens: [1, 5, 9, 13, 17, 21, 25, 29] }] };
const shape = { layers: model.hp.nLayer, kvHeads: model.hp.nHeadKv, headDim: model.hp.headDim };

test('reference logits: computed once, reused by key, a tampered artifact is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-ref-'));
  const a = loadOrComputeReference(model, spec, dir);
  assert.equal(a.reused, false);
  assert.equal(a.ref.entries[0]!.logits.length, (8 + 6 - 1) * model.nVocab);
  const b = loadOrComputeReference(model, spec, dir);
  assert.equal(b.reused, true);
  assert.deepEqual(b.ref.entries[0]!.logits, a.ref.entries[0]!.logits);
  // Another horizon is another key.
  assert.notEqual(loadOrComputeReference(model, { ...spec, horizon: 5 }, dir).path, a.path);
  const bytes = readFileSync(a.path);
  bytes[bytes.length - 3] ^= 0x40;
  writeFileSync(a.path, bytes);
  assert.throws(() => readReference(new Uint8Array(bytes)), /sha256/);
});

test('eval: the reference policy scores KL 0 and full exact-match; q4_0 drifts; bytes match the formula', () => {
  const { ref } = loadOrComputeReference(model, spec, mkdtempSync(join(tmpdir(), 'kvpack-ref-')));
  const f16 = scoreArm(ref, { name: 'f16', policy: REFERENCE_POLICY }, runArm(model, ref, { name: 'f16', policy: REFERENCE_POLICY }), shape, [3, 6]);
  assert.equal(f16.kl, 0);
  assert.equal(f16.top1Agree, 1);
  assert.equal(f16.exactAt[6], 1);
  assert.equal(f16.effectiveBits, 16);
  const q4 = { name: 'q4_0', policy: schemePolicy('q4_0', { window: 0, sinks: 0 }) };
  const s = scoreArm(ref, q4, runArm(model, ref, q4), shape, [3, 6]);
  assert.ok(s.kl > 0);
  assert.equal(s.bytes, s.formulaBytes);
  assert.equal(s.formatBits, 4.5);
});

test('modelSha256 of a Hugging Face directory: changes with any file, not with the directory path', () => {
  const a = mkdtempSync(join(tmpdir(), 'kvpack-sha-'));
  const b = mkdtempSync(join(tmpdir(), 'kvpack-sha-'));
  try {
    for (const d of [a, b]) {
      writeFileSync(join(d, 'config.json'), '{}');
      writeFileSync(join(d, 'model.safetensors'), 'weights');
    }
    assert.equal(modelSha256(a), modelSha256(b));
    writeFileSync(join(b, 'model.safetensors'), 'weightz');
    assert.notEqual(modelSha256(a), modelSha256(b));
    assert.notEqual(modelSha256(a), modelSha256(join(a, 'config.json')));
  } finally {
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  }
});
