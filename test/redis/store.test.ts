import test from 'node:test';
import assert from 'node:assert/strict';
import { reportSkip } from './harness.js';
import { chainKeys, payload, TEST_STORE_KEY, withRedis } from './fixtures.js';
import { encodeStoreValue, storeKey, STORE_FORMAT_VERSION } from '../../src/store/value.js';

const skip = reportSkip('test/redis/store.test.ts');

test('round trip: chunks written behind come back byte for byte, counted', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url);
    assert.ok(await store.waitReady(5000));
    const keys = chainKeys('rt', 3);
    const values = keys.map((_, i) => payload(i, 500 + i));
    keys.forEach((k, i) => store.put(k, values[i]!));
    await store.flush();
    assert.deepEqual(await store.getChain(keys), values);
    const s = store.stats();
    assert.equal(s.writtenChunks, 3);
    assert.equal(s.hitChunks, 3);
    assert.equal(s.hitBytes, 500 + 501 + 502);
    assert.ok(s.readBytes > s.hitBytes && s.writtenBytes === s.readBytes);
    assert.equal(s.errors + s.corrupt + s.failedWrites + s.droppedWrites, 0);
    assert.equal(store.counters.latency.get.count, 1);
  }),
);

test('a chain lookup stops at the first miss, across pipelined batches', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url, { batch: 2 });
    assert.ok(await store.waitReady(5000));
    const keys = chainKeys('chain', 6);
    for (const i of [0, 1, 2, 4, 5]) store.put(keys[i]!, payload(i));
    await store.flush();
    const hits = await store.getChain(keys);
    assert.deepEqual(
      hits,
      [0, 1, 2].map((i) => payload(i)),
    );
    assert.equal(store.stats().missChunks, 3);
    assert.deepEqual(await store.getChain(keys.slice(4)), [payload(4), payload(5)]);
    assert.deepEqual(await store.getChain([]), []);
  }),
);

test('corrupted or truncated values are misses, logged and deleted, never returned', { skip }, () =>
  withRedis(async (r, open) => {
    const { store, lines } = open(r.url);
    assert.ok(await store.waitReady(5000));
    const keys = chainKeys('corrupt', 3);
    keys.forEach((k, i) => store.put(k, payload(i)));
    await store.flush();
    const admin = r.admin();
    // Flip one payload byte in place, and cut the last value short.
    const at = 100;
    const old = (await admin.getrangeBuffer(store.fullKey(keys[1]!), at, at))[0]!;
    await admin.setrange(store.fullKey(keys[1]!), at, Buffer.from([old ^ 0x01]));
    assert.deepEqual(await store.getChain(keys), [payload(0)]);
    assert.equal(store.stats().corrupt, 1);
    assert.match(lines.join('\n'), /MAC mismatch.*deleted/);
    await store.flush();
    assert.equal(await admin.exists(store.fullKey(keys[1]!)), 0);
    const v2 = (await admin.getBuffer(store.fullKey(keys[2]!)))!;
    await admin.set(store.fullKey(keys[2]!), v2.subarray(0, v2.length - 7));
    assert.deepEqual(await store.getChain(keys.slice(2)), []);
    assert.equal(store.stats().corrupt, 2);
    await store.flush();
    assert.equal(await admin.exists(store.fullKey(keys[2]!)), 0);
    assert.deepEqual(await store.getChain(keys.slice(0, 1)), [payload(0)]);
  }),
);

test('values of another store format version are never read; misplaced values are refused', { skip }, () =>
  withRedis(async (r, open) => {
    const { store: other } = open(r.url, { formatVersion: STORE_FORMAT_VERSION + 1 });
    const { store } = open(r.url);
    assert.ok((await other.waitReady(5000)) && (await store.waitReady(5000)));
    const [k0, k1] = chainKeys('version', 2);
    other.put(k0!, payload(0));
    await other.flush();
    const admin = r.admin();
    assert.equal(await admin.exists(other.fullKey(k0!)), 1);
    assert.deepEqual(await store.getChain([k0!]), []);
    assert.equal(store.stats().corrupt, 0, 'another version lives under another key: not even fetched');
    // A value that claims another version under this version's key (say, a bug) is refused and deleted.
    const mine = store.fullKey(k0!);
    await admin.set(mine, encodeStoreValue(mine, payload(0), Buffer.from(TEST_STORE_KEY), STORE_FORMAT_VERSION + 1));
    assert.deepEqual(await store.getChain([k0!]), []);
    // A valid value copied under another key is refused as well.
    store.put(k1!, payload(1));
    await store.flush();
    await admin.set(mine, (await admin.getBuffer(store.fullKey(k1!)))!);
    assert.deepEqual(await store.getChain([k0!]), []);
    assert.equal(store.stats().corrupt, 2);
    assert.equal(await admin.exists(other.fullKey(k0!)), 1, 'the other version is left alone');
    assert.equal(storeKey('test', k0!), mine);
  }),
);

test('every key gets the configured TTL', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url, { ttlSeconds: 90 });
    assert.ok(await store.waitReady(5000));
    const keys = chainKeys('ttl', 4);
    keys.forEach((k, i) => store.put(k, payload(i)));
    await store.flush();
    for (const k of keys) {
      const ttl = await r.admin().pttl(store.fullKey(k));
      assert.ok(ttl > 80_000 && ttl <= 90_000, `pttl ${ttl}`);
    }
  }),
);

test('write-behind never blocks: puts to a paused Redis return at once; lookups give up at their deadline', { skip }, () =>
  withRedis(async (r, open) => {
    const { store } = open(r.url, { lookupTimeoutMs: 150, commandTimeoutMs: 5000 });
    assert.ok(await store.waitReady(5000));
    const [k0, k1] = chainKeys('pause', 2);
    const admin = r.admin();
    await admin.client('PAUSE', 800, 'ALL');
    assert.equal(store.put(k0!, payload(0)), undefined, 'put returns nothing to await');
    assert.equal(store.pending().entries, 1);
    // The write is sent but the paused server holds it: still unanswered while a second put returns at once.
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(store.stats().writtenChunks, 0);
    store.put(k1!, payload(1));
    assert.deepEqual(await store.getChain([k0!]), []);
    assert.equal(store.stats().errors, 1, 'the lookup timed out');
    await store.flush();
    assert.equal(store.stats().writtenChunks, 2, 'the writes landed once the pause ended');
    assert.deepEqual(await store.getChain([k0!, k1!]), [payload(0), payload(1)]);
  }),
);
