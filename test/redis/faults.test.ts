import test from 'node:test';
import assert from 'node:assert/strict';
import { reportSkip } from './harness.js';
import { chainKeys, payload, withRedis } from './fixtures.js';

const skip = reportSkip('test/redis/faults.test.ts');

test('Redis killed mid-run: lookups miss and puts drop without a throw; restarted on its port: hits resume by themselves', { skip }, () =>
  withRedis(async (r, open) => {
    const { store, lines } = open(r.url, { lookupTimeoutMs: 300, commandTimeoutMs: 300 });
    assert.ok(await store.waitReady(5000));
    const keys = chainKeys('kill', 4);
    keys.forEach((k, i) => store.put(k, payload(i)));
    await store.flush();
    assert.equal((await store.getChain(keys)).length, 4);
    await r.kill();
    // Straight after the crash (the client may not have noticed yet) and once it has.
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(await store.getChain(keys), []);
      store.put(`${keys[0]}-${round}`, payload(9));
      await store.flush();
      await new Promise((res) => setTimeout(res, 50));
    }
    const s = store.stats();
    assert.equal(s.writtenChunks, 4);
    assert.equal(s.failedWrites, 3, 'every put made while down was dropped');
    assert.ok(s.errors >= 3);
    assert.equal(store.ready, false);
    assert.match(lines.join('\n'), /unavailable/);
    await r.restart();
    assert.ok(await store.waitReady(5000), 'reconnected without being asked');
    assert.match(lines.at(-1)!, /reconnected/);
    // Nothing was persisted: the restarted server is empty until the chunks are written again.
    assert.deepEqual(await store.getChain(keys), []);
    keys.forEach((k, i) => store.put(k, payload(i)));
    await store.flush();
    assert.deepEqual(
      await store.getChain(keys),
      keys.map((_, i) => payload(i)),
    );
  }),
);

test('Redis evicting past maxmemory (allkeys-lru): partial hits, no errors', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url);
    assert.ok(await store.waitReady(5000));
    const admin = r.admin();
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await admin.config('SET', 'maxmemory', String(used + (1 << 20)));
    const keys = chainKeys('lru', 48);
    const size = 64 << 10;
    // Written a few at a time, as prefills would: 3 MiB into 1 MiB of room.
    for (let i = 0; i < keys.length; i++) {
      store.put(keys[i]!, payload(i, size));
      if (i % 4 === 3) await store.flush();
    }
    await store.flush();
    const evicted = Number(/evicted_keys:(\d+)/.exec(await admin.info('stats'))![1]);
    assert.ok(evicted > 0, 'Redis evicted (else this test proves nothing)');
    // Freeze what is held: still over its limit, Redis would evict again on the next command (our reads too).
    await admin.config('SET', 'maxmemory', '0');
    const present = await Promise.all(keys.map((k) => admin.exists(store.fullKey(k))));
    const held = present.filter((x) => x === 1).length;
    assert.ok(held > 0 && held < keys.length, `${held} of ${keys.length} held`);
    // Every chain answer is its longest held prefix; an evicted chunk is a normal miss.
    for (const from of [0, present.indexOf(1)]) {
      const run = present.slice(from).indexOf(0);
      const hits = await store.getChain(keys.slice(from));
      assert.equal(hits.length, run < 0 ? keys.length - from : run);
      hits.forEach((h, j) => assert.deepEqual(h, payload(from + j, size)));
    }
    assert.ok(present.indexOf(1) > 0 || present[0] === 1);
    const s = store.stats();
    assert.equal(s.errors + s.failedWrites + s.corrupt + s.droppedWrites, 0);
    assert.equal(s.writtenChunks, keys.length);
  }),
);

test('Redis too slow (paused past the command timeout): lookups miss, writes fail, then it serves again', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url, { lookupTimeoutMs: 2000, commandTimeoutMs: 150 });
    assert.ok(await store.waitReady(5000));
    const [k0, k1] = chainKeys('slow', 2);
    store.put(k0!, payload(0));
    await store.flush();
    await r.admin().client('PAUSE', 600, 'ALL');
    assert.deepEqual(await store.getChain([k0!]), []);
    store.put(k1!, payload(1));
    await store.flush();
    const s = store.stats();
    assert.equal(s.failedWrites, 1);
    assert.equal(s.errors, 2);
    await new Promise((res) => setTimeout(res, 600));
    assert.ok(await store.waitReady(5000));
    assert.deepEqual(await store.getChain([k0!]), [payload(0)]);
  }),
);
