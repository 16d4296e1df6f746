import test from 'node:test';
import assert from 'node:assert/strict';
import { decodeStoreValue, encodeStoreValue, storeKey, STORE_FORMAT_VERSION } from './value.js';

const key = storeKey('ns', 'abc');
const payload = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) & 255));

test('store keys carry the namespace and the format version', () => {
  assert.equal(key, `ns:v${STORE_FORMAT_VERSION}:abc`);
  assert.notEqual(storeKey('ns', 'abc', STORE_FORMAT_VERSION + 1), key);
});

test('a value round-trips under its own key', () => {
  const d = decodeStoreValue(key, encodeStoreValue(key, payload));
  assert.ok(d.ok);
  assert.deepEqual(d.payload, payload);
  const empty = decodeStoreValue(key, encodeStoreValue(key, new Uint8Array(0)));
  assert.ok(empty.ok && empty.payload.length === 0);
});

test('every flipped byte, every truncation, another key or version: refused', () => {
  const v = encodeStoreValue(key, payload);
  for (let i = 0; i < v.length; i++) {
    const w = Buffer.from(v);
    w[i]! ^= 0x10;
    assert.equal(decodeStoreValue(key, w).ok, false, `byte ${i}`);
  }
  for (const n of [0, 1, 11, 43, v.length - 33, v.length - 1]) assert.equal(decodeStoreValue(key, v.subarray(0, n)).ok, false, `length ${n}`);
  const other = decodeStoreValue(storeKey('ns', 'abd'), v);
  assert.ok(!other.ok && /another key/.test(other.reason));
  const old = decodeStoreValue(key, encodeStoreValue(key, payload, STORE_FORMAT_VERSION + 1));
  assert.ok(!old.ok && /version/.test(old.reason));
  const bad = decodeStoreValue(key, Buffer.concat([v, Buffer.alloc(1)]));
  assert.ok(!bad.ok && /checksum/.test(bad.reason));
});
