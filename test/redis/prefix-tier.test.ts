import test from 'node:test';
import assert from 'node:assert/strict';
import { reportSkip } from './harness.js';
import { chainKeys, withRedis } from './fixtures.js';
import { KvCache } from '../../src/cache/kvcache.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import { attendAll } from '../fixtures/attend-all.js';
import { Prng } from '../../src/numeric/prng.js';
import { RemotePrefixTier } from '../../src/server/remote-prefix.js';
import type { RedisChunkStore } from '../../src/store/redis-store.js';

const skip = reportSkip('test/redis/prefix-tier.test.ts');
const [H, D, C, L] = [2, 64, 32, 2];
const policy = schemePolicy('q2k', { window: 16 });

const make = (p = policy) => new KvCache({ layers: L, kvHeads: H, headDim: D, capacity: 256, policy: p, chunkTokens: C });

function filled(tokens: number): KvCache {
  const c = make();
  for (let l = 0; l < L; l++) c.append(l, new Prng(10 + l).normals(tokens * H * D), new Prng(20 + l).normals(tokens * H * D));
  return c;
}

test('two instances, one Redis: B imports the chunks and resume rows A stored and continues bit for bit; other chains never hit', { skip }, () =>
  withRedis(async (r, open) => {
    const a = new RemotePrefixTier(open(r.url).store, { log: () => {} });
    const bLines: string[] = [];
    const b = new RemotePrefixTier(open(r.url).store, { log: (l) => bLines.push(l) });
    await Promise.all([a.store, b.store].map((s) => (s as RedisChunkStore).waitReady(5000)));
    const src = filled(3 * C);
    const hashes = chainKeys('prompt', 3);
    // Three chunks and the resume rows at their end.
    assert.equal(a.offerResumable(hashes, src), 4);
    await a.store.flush();
    const got = await b.fetchResumable(make, hashes, 0, 8);
    assert.deepEqual([got.depth, got.chain, got.cache?.length], [3, 3, 3 * C]);
    // Appending the same rows to both gives the same attention, bit for bit.
    const more = (c: KvCache) => {
      for (let l = 0; l < L; l++) c.append(l, new Prng(30 + l).normals(20 * H * D), new Prng(40 + l).normals(20 * H * D));
      return attendAll(c);
    };
    assert.deepEqual(more(got.cache!), more(src));
    // fetchInto: the chunks alone, without resume rows (a cache that is not resumable at their end).
    const bare = make();
    assert.equal(await b.fetchInto(bare, hashes), 3);
    assert.equal(bare.resumableAt(3 * C), false);
    // Another salt, model or policy roots another chain: nothing shared.
    assert.equal((await b.fetchResumable(make, chainKeys('other-salt', 3), 0, 8)).chain, 0);
    // Same chain, cache of another shape (a key collision or a bug): refused, never imported.
    const refused = await b.fetchResumable(() => make(schemePolicy('q4_0', { window: 16 })), hashes, 0, 8);
    assert.deepEqual([refused.cache, refused.chain], [null, 3]);
    assert.match(bLines.join('\n'), /refused 3 remote chunks/);
    for (const c of [src, got.cache!, bare]) c.dispose();
  }),
);

test('offer sends each chunk once, again after it went missing (evicted, or Redis restarted empty)', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url, { lookupTimeoutMs: 300, commandTimeoutMs: 300 });
    const tier = new RemotePrefixTier(store, { log: () => {} });
    assert.ok(await store.waitReady(5000));
    const src = filled(3 * C);
    const hashes = chainKeys('grow', 3);
    assert.equal(tier.offer(hashes.slice(0, 2), src), 2);
    assert.equal(tier.offer(hashes, src), 1, 'a longer prompt sends only its new chunk');
    await store.flush();
    await r.admin().del(store.fullKey(hashes[1]!));
    assert.equal(await tier.fetchInto(make(), hashes), 1);
    assert.equal(tier.offer(hashes, src), 2, 'the chunks past the miss are sent again');
    await store.flush();
    assert.equal(await tier.fetchInto(make(), hashes), 3);
    await r.kill();
    await r.restart();
    assert.ok(await store.waitReady(5000));
    assert.equal(tier.offer(hashes, src), 3, 'a reconnect forgets what was written');
    await store.flush();
    assert.equal(await tier.fetchInto(make(), hashes), 3);
    src.dispose();
  }),
);

test('offer stops at a chunk a sliding-window layer dropped', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url);
    const lines: string[] = [];
    const tier = new RemotePrefixTier(store, { log: (l) => lines.push(l) });
    const swa = make(schemePolicy('q8_0', { slidingWindow: C }));
    for (let c = 0; c < 3; c++) for (let l = 0; l < L; l++) swa.append(l, new Prng(c * 7 + l).normals(C * H * D), new Prng(c * 9 + l).normals(C * H * D));
    assert.equal(tier.offer(chainKeys('swa', 3), swa), 0);
    assert.match(lines[0]!, /dropped chunk 0/);
    swa.dispose();
  }),
);
