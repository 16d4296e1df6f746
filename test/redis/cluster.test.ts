import test from 'node:test';
import assert from 'node:assert/strict';
import { RedisCluster, reportSkip } from './harness.js';
import { chainKeys, payload, testStore } from './fixtures.js';

const skip = reportSkip('test/redis/cluster.test.ts');

test('cluster: a chain whose keys live in different slots and nodes round-trips with single-key commands', { skip }, async () => {
  const cluster = await RedisCluster.start(3);
  const { store } = testStore(cluster.url);
  try {
    assert.ok(await store.waitReady(10000));
    const keys = chainKeys('cluster', 24);
    keys.forEach((k, i) => store.put(k, payload(i)));
    await store.flush();
    const admin = cluster.nodes[0]!.admin();
    const slots = new Set(await Promise.all(keys.map((k) => admin.cluster('KEYSLOT', store.fullKey(k)))));
    assert.ok(slots.size > 20, `${slots.size} slots`);
    const perNode = await Promise.all(cluster.nodes.map((n) => n.admin().dbsize()));
    assert.equal(perNode.filter((n) => n > 0).length, 3, `keys per node: ${perNode}`);
    assert.equal(
      perNode.reduce((a, b) => a + b, 0),
      keys.length,
    );
    assert.deepEqual(
      await store.getChain(keys),
      keys.map((_, i) => payload(i)),
    );
    // A miss in the middle ends the chain there, as on one node.
    // (Deleted on whichever node owns the slot; the others answer MOVED.)
    const gone = await Promise.all(
      cluster.nodes.map((n) =>
        n
          .admin()
          .del(store.fullKey(keys[10]!))
          .catch(() => 0),
      ),
    );
    assert.equal(
      gone.reduce((a, b) => a + b, 0),
      1,
    );
    assert.deepEqual(
      await store.getChain(keys),
      keys.slice(0, 10).map((_, i) => payload(i)),
    );
    const s = store.stats();
    assert.equal(s.errors + s.failedWrites + s.corrupt, 0);
    assert.equal(s.hitChunks, 34);
    assert.equal(s.missChunks, 14);
  } finally {
    await store.close(0);
    await cluster.stop();
  }
});
