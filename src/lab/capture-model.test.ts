import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readStored } from '../kernels/attention/dequantize.js';
import { modelFromLoaded } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { captureModel, CAPTURE_POLICY } from './capture-model.js';
import { readCapture, writeCapture } from './capture.js';

test('capture: Q/K/V of chosen layers round-trip through the file and equal what an f32 cache stores', () => {
  const model = modelFromLoaded(tinyModel('qwen3'));
  const tokens = Array.from({ length: 37 }, (_, i) => (i * 7 + 1) % model.nVocab);
  const cap = readCapture(writeCapture(captureModel(model, tokens, [1, 5], { prompt: 'test' })));
  assert.deepEqual(
    cap.layers.map((l) => l.layer),
    [1, 5],
  );
  assert.equal(cap.meta.prompt, 'test');
  const hp = model.hp;
  const cache = model.createCache({ policy: CAPTURE_POLICY, capacity: tokens.length });
  const qs = new Map<number, Float32Array>();
  model.forward(tokens, cache, { observe: (l, q) => void qs.set(l, q.slice()) });
  for (const l of cap.layers) {
    assert.equal(l.tokens, tokens.length);
    assert.equal(l.heads, hp.nHead);
    assert.equal(l.kvHeads, hp.nHeadKv);
    assert.equal(l.headDim, hp.headDim);
    assert.deepEqual(l.q, qs.get(l.layer));
    // The cache stores rows [tokens, kvHeads*D]; the capture is [kvHeads, tokens, D].
    const D = hp.headDim;
    for (const which of ['k', 'v'] as const) {
      const stored = readStored(cache.view(l.layer), which);
      const got = l[which];
      for (let h = 0; h < hp.nHeadKv; h++) {
        for (let t = 0; t < tokens.length; t++) {
          assert.deepEqual(
            got.subarray((h * tokens.length + t) * D, (h * tokens.length + t + 1) * D),
            stored.subarray((t * hp.nHeadKv + h) * D, (t * hp.nHeadKv + h + 1) * D),
          );
        }
      }
    }
  }
  assert.throws(() => captureModel(model, tokens, [hp.nLayer]), /outside/);
});
