// Head packing on small heads (TinyStories-656K: head dim 16; stories260K: 8): blocks run across heads
// as ggml's rows do, effective bits are the format's, and attention stays exact per head.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvCache } from './kvcache.js';
import { kvBytes } from './accounting.js';
import { schemePolicy } from './schemes.js';
import type { CachePolicy } from './policy.js';
import { headPacking } from './head-packing.js';
import { planLayers } from './policy.js';
import { Prng } from '../numeric/prng.js';
import { readStored } from '../kernels/attention/dequantize.js';
import { attendNaive } from '../kernels/attention/naive.js';
import { decode, encode } from '../formats/codec.js';

const KV = 4;
const HEADS = 8;
const T = 77;

function fill(policy: CachePolicy, D: number): { cache: KvCache; k: Float32Array; v: Float32Array } {
  const cache = new KvCache({ layers: 1, kvHeads: KV, headDim: D, capacity: 128, policy });
  const k = new Prng(1).normals(T * KV * D);
  const v = new Prng(2).normals(T * KV * D);
  cache.append(0, k, v);
  return { cache, k, v };
}

const bare = (scheme: string) => schemePolicy(scheme, { window: 0, sinks: 0 });

test('head packing: groups of adjacent heads as wide as a block; none when blocks fit a head', () => {
  const plan = (s: string) => planLayers(bare(s), 1, 128)[0]!;
  assert.deepEqual(headPacking(plan('q8_0'), 4, 16), { group: 2, heads: 2, headDim: 32 });
  assert.deepEqual(headPacking(plan('q8_0'), 4, 8), { group: 4, heads: 1, headDim: 32 });
  assert.deepEqual(headPacking(plan('nf4'), 4, 16), { group: 4, heads: 1, headDim: 64 });
  assert.deepEqual(headPacking(plan('q8_0'), 2, 64), { group: 1, heads: 2, headDim: 64 });
  assert.deepEqual(headPacking(plan('f16'), 4, 8), { group: 1, heads: 4, headDim: 8 });
  // q2: both tensors channel-axis, nothing pads.
  assert.deepEqual(headPacking(plan('q2'), 4, 16), { group: 1, heads: 4, headDim: 16 });
});

test('head packing: q8_0 / q4_0 at head dim 16 cost the format bits (8.5 / 4.5), nbytes equals kvBytes', () => {
  for (const [scheme, bits] of [
    ['q8_0', 8.5],
    ['q4_0', 4.5],
  ] as const) {
    const { cache } = fill(bare(scheme), 16);
    const want = kvBytes({ ctx: T, layers: 1, kvHeads: KV, headDim: 16, policy: bare(scheme) });
    assert.equal(cache.nbytes().total, want.total, scheme);
    assert.equal(want.bitsPerElement, bits, scheme);
    cache.dispose();
  }
});

test('head packing: stored K is the ggml encoding of whole rows (blocks across heads)', () => {
  const { cache, k } = fill(bare('q8_0'), 16);
  const row = KV * 16;
  const want = decode('q8_0', encode('q8_0', k, [T, row]), k.length, [T, row]);
  assert.deepEqual(readStored(cache.view(0), 'k'), want);
  cache.dispose();
});

for (const D of [8, 16]) {
  for (const scheme of ['q8_0', 'q4_0', 'q2k', 'nf4', 'kivi2', 'int2s', 'tern', 'sign']) {
    test(`head packing: attention at head dim ${D} equals float64 attention over the stored values per head (${scheme})`, () => {
      const { cache } = fill(schemePolicy(scheme, { window: 16, sinks: 2 }), D);
      const view = cache.view(0);
      const q = new Prng(3).normals(HEADS * D);
      const out = new Float32Array(q.length);
      cache.attend(0, q, out);
      const want = attendNaive(q, readStored(view, 'k'), readStored(view, 'v'), HEADS, KV, D);
      let err = 0;
      for (let i = 0; i < out.length; i++) err = Math.max(err, Math.abs(out[i]! - want[i]!));
      assert.ok(err < 1e-4, `max abs error ${err}`);
      cache.dispose();
    });
  }
}

test('head packing: save/restore round-trips a packed cache', () => {
  const { cache } = fill(bare('q4_0'), 16);
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-pack-'));
  try {
    cache.save(join(dir, 'c.kvc'));
    const back = KvCache.restore(join(dir, 'c.kvc'));
    assert.deepEqual(readStored(back.view(0), 'v'), readStored(cache.view(0), 'v'));
    const q = new Prng(4).normals(HEADS * 16);
    const a = new Float32Array(q.length);
    const b = new Float32Array(q.length);
    cache.attend(0, q, a);
    back.attend(0, q, b);
    assert.deepEqual(a, b);
    back.dispose();
  } finally {
    cache.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
