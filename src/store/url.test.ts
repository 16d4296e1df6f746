import test from 'node:test';
import assert from 'node:assert/strict';
import { parseStoreUrl } from './url.js';
import { StoreUrlError } from '../errors.js';

const noEnv = {};

test('redis:// host, port and database', () => {
  assert.deepEqual(parseStoreUrl('redis://127.0.0.1:6380/2', noEnv), { mode: 'single', nodes: [{ host: '127.0.0.1', port: 6380 }], tls: false, db: 2 });
  assert.deepEqual(parseStoreUrl('redis://cache.internal', noEnv).nodes, [{ host: 'cache.internal', port: 6379 }]);
  assert.deepEqual(parseStoreUrl('redis://[::1]:7000', noEnv).nodes, [{ host: '::1', port: 7000 }]);
});

test('rediss:// is TLS; password from the URL, else KVPACK_REDIS_PASSWORD', () => {
  const t = parseStoreUrl('rediss://alice:p%40ss@h:6390', { KVPACK_REDIS_PASSWORD: 'env' });
  assert.equal(t.tls, true);
  assert.equal(t.username, 'alice');
  assert.equal(t.password, 'p@ss');
  assert.equal(parseStoreUrl('rediss://h:6390', { KVPACK_REDIS_PASSWORD: 'env' }).password, 'env');
  assert.equal(parseStoreUrl('redis://:secret@h', noEnv).password, 'secret');
  assert.equal(parseStoreUrl('redis://h', noEnv).password, undefined);
});

test('redis-cluster:// takes several nodes, database 0 only', () => {
  const t = parseStoreUrl('redis-cluster://h1:7000,h2:7001,h3', noEnv);
  assert.equal(t.mode, 'cluster');
  assert.deepEqual(t.nodes, [
    { host: 'h1', port: 7000 },
    { host: 'h2', port: 7001 },
    { host: 'h3', port: 6379 },
  ]);
  assert.equal(parseStoreUrl('rediss-cluster://h1:7000', noEnv).tls, true);
  assert.throws(() => parseStoreUrl('redis-cluster://h1:7000/3', noEnv), /only database 0/);
});

test('bad addresses: one typed error naming the part, never the password', () => {
  const cases: [string, RegExp][] = [
    ['', /empty/],
    ['http://h:1', /unknown scheme 'http:'/],
    ['h:6379', /unknown scheme/],
    ['redis://', /no host/],
    ['redis://h:0', /port '0'/],
    ['redis://h:65536', /port '65536'/],
    ['redis://h:', /port ''/],
    ['redis://h:12x', /not HOST\[:PORT\]/],
    ['redis://h/x', /database 'x'/],
    ['redis://h1:1,h2:2', /redis-cluster/],
    ['redis://h:1?db=2', /query/],
    ['redis://u:%zz@h', /password is not valid percent-encoding/],
  ];
  for (const [url, re] of cases) {
    assert.throws(
      () => parseStoreUrl(url, noEnv),
      (e: unknown) => e instanceof StoreUrlError && e.code === 'BAD_STORE_URL' && re.test(e.message),
      url,
    );
  }
  assert.throws(
    () => parseStoreUrl('redis://u:hunter2@h:99999', noEnv),
    (e: Error) => !e.message.includes('hunter2') && e.message.includes('***'),
  );
});
