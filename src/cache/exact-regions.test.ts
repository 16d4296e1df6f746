// Exact regions (window, sinks, anchors) are never less exact than the bulk: they apply only over a lossy
// bulk, at a precision that holds every exact bulk tensor's values; float caches hold one copy per position.
import test from 'node:test';
import assert from 'node:assert/strict';
import { KvCache } from './kvcache.js';
import { kvBytes } from './accounting.js';
import { planLayers, type CachePolicy } from './policy.js';
import { DEFAULT_SINKS, DEFAULT_WINDOW } from './defaults.js';
import { schemes, schemePolicy } from './schemes.js';
import { memoryTable } from '../cli/memory.js';
import { readStored } from '../kernels/attention/dequantize.js';
import { getFormat } from '../formats/registry.js';
import { rowBytes } from '../formats/format.js';
import { Prng } from '../numeric/prng.js';

/** A cache of `layers` x `kvHeads` x `headDim` holding n prompt positions and `decoded` more after beginDecode. */
function filled(policy: CachePolicy, shape: { layers: number; kvHeads: number; headDim: number }, n: number, decoded = 0) {
  const cache = new KvCache({ ...shape, capacity: 4096, policy });
  const row = shape.kvHeads * shape.headDim;
  const rng = new Prng(5);
  const k: Float32Array[] = [];
  const v: Float32Array[] = [];
  const put = (tokens: number) => {
    for (let l = 0; l < shape.layers; l++) {
      const kk = rng.normals(tokens * row, 3);
      const vv = rng.normals(tokens * row, 3);
      cache.append(l, kk, vv);
      k[l] = k[l] ? Float32Array.from([...k[l]!, ...kk]) : kk;
      v[l] = v[l] ? Float32Array.from([...v[l]!, ...vv]) : vv;
    }
  };
  put(n);
  cache.beginDecode();
  for (let i = 0; i < decoded; i++) put(1);
  return { cache, k, v };
}

const stories260K = { layers: 5, kvHeads: 4, headDim: 8 };

test('f16, f32 and bf16 caches hold exactly one copy of each position, whatever window, sinks or anchors ask for', () => {
  for (const [kf, vf] of [
    ['f16', 'f16'],
    ['f32', 'f32'],
    ['bf16', 'bf16'],
    ['f16', 'f32'],
  ] as const) {
    for (const extra of [{}, { window: 16, sinks: 4, anchors: { count: 8 } }] as Partial<CachePolicy>[]) {
      const policy: CachePolicy = { ...extra, k: kf, v: vf };
      const { cache } = filled(policy, stories260K, 40, 25);
      const b = cache.nbytes();
      const cell = stories260K.kvHeads * (rowBytes(getFormat(kf), stories260K.headDim) + rowBytes(getFormat(vf), stories260K.headDim));
      const what = `${kf}/${vf} ${JSON.stringify(extra)}`;
      assert.equal(b.window + b.sinks + b.anchors + b.staging, 0, `${what}: exact regions over an exact bulk`);
      assert.equal(b.total, 65 * stories260K.layers * cell, what);
      const closed = kvBytes({ ctx: 65, ...stories260K, policy, prompt: 40 });
      for (const key of ['sinks', 'anchors', 'bulk', 'window', 'staging', 'total'] as const) assert.equal(closed[key], b[key], `${what}: kvBytes ${key}`);
      cache.dispose();
    }
  }
  // stories260K with llama.cpp's default cache (f16/f16) after 65 positions: the bulk alone, 640 B per position.
  const { cache } = filled({ k: 'f16', v: 'f16' }, stories260K, 65);
  assert.equal(cache.nbytes().total, 41_600);
  cache.dispose();
});

test("over a lossy bulk, an exact tensor's window and sinks read back exactly what its bulk holds (f32 stays f32)", () => {
  const shape = { layers: 1, kvHeads: 2, headDim: 32 };
  for (const kf of ['f32', 'bf16', 'f16'] as const) {
    // An explicit f16 precision names the lossy tensors' regions only.
    const policy: CachePolicy = { k: kf, v: 'q4_0', window: 16, sinks: 4, exact: 'f16' };
    const plan = planLayers(policy, 1, 4096)[0]!;
    assert.deepEqual([plan.exact.k.id, plan.exact.v.id, plan.window, plan.sinks], [kf, 'f16', 16, 4], `regions over ${kf} K + q4_0 V`);
    const { cache, k } = filled(policy, shape, 100);
    const got = readStored(cache.view(0), 'k');
    const f = getFormat(kf);
    const bulkOnly = new Float32Array(k[0]!.length);
    // What the bulk alone would hold: each value through the K format's own encoder.
    for (let i = 0; i < bulkOnly.length; i += 32) {
      const bytes = new Uint8Array(f.blockBytes * (32 / f.blockValues));
      for (let b = 0; b < 32 / f.blockValues; b++) f.encodeBlock(k[0]!, i + b * f.blockValues, bytes, b * f.blockBytes);
      for (let b = 0; b < 32 / f.blockValues; b++) f.decodeBlock(bytes, b * f.blockBytes, bulkOnly, i + b * f.blockValues);
    }
    assert.deepEqual(got, bulkOnly, `${kf} K: window and sinks read back exactly what the ${kf} bulk holds`);
    cache.dispose();
  }
});

test('anchors never hold an exact tensor less exactly than its bulk: it keeps its own format', () => {
  const a = planLayers({ k: 'f32', v: 'q4_0', anchors: { count: 4, precision: 'int8' } }, 1, 64)[0]!.anchors!;
  assert.deepEqual([a.k.id, a.v.id], ['f32', 'q8_0']);
  assert.equal(planLayers({ k: 'q2c_0', v: 'q4_0', anchors: { count: 4, precision: 'int4' } }, 1, 64)[0]!.anchors!.v.id, 'q4_0');
  assert.equal(planLayers({ k: 'f16', v: 'f16', anchors: { count: 4 } }, 1, 64)[0]!.anchors, null, 'no anchors over an exact bulk');
});

test('one set of region defaults: a policy without window/sinks plans the defaults module, and `kvpack memory` agrees with nbytes()', () => {
  const shape = { layers: 2, kvHeads: 2, headDim: 64 };
  const ctx = 300;
  const rows = memoryTable({ ctx, ...shape });
  for (const s of schemes.values()) {
    const policy = schemePolicy(s.name);
    const plan = planLayers(policy, shape.layers, 4096)[0]!;
    const exact = plan.k.exact && plan.v.exact;
    assert.deepEqual([plan.window, plan.sinks], exact ? [0, 0] : [DEFAULT_WINDOW, DEFAULT_SINKS], s.name);
    const { cache } = filled(policy, shape, ctx);
    const row = rows.find((r) => r.scheme === s.name)!;
    const b = cache.nbytes();
    assert.equal(row.totalBytes, b.total, `${s.name}: memory table vs nbytes()`);
    assert.equal(row.overlayBytes, b.sinks + b.window + b.anchors, s.name);
    cache.dispose();
  }
});
