import test from 'node:test';
import assert from 'node:assert/strict';
import { WriteQueue, type QueuedWrite } from './write-queue.js';

const w = (key: string, n: number): QueuedWrite => ({ key, payload: new Uint8Array(n) });

test('write queue: bounded in entries and bytes, the oldest dropped first, duplicates queued once', () => {
  const dropped: string[] = [];
  const q = new WriteQueue(3, 100, (x) => dropped.push(x.key));
  for (const k of ['a', 'b', 'c', 'd']) q.push(w(k, 10));
  assert.deepEqual(dropped, ['a']);
  q.push(w('c', 10));
  assert.equal(q.length, 3);
  q.push(w('big', 85));
  assert.deepEqual(dropped, ['a', 'b', 'c']);
  assert.equal(q.bytes, 95);
  q.push(w('huge', 101));
  assert.deepEqual(dropped, ['a', 'b', 'c', 'huge']);
  assert.deepEqual(
    q.take(10, 1000).map((x) => x.key),
    ['d', 'big'],
  );
  assert.equal(q.length + q.bytes, 0);
});

test('write queue: take respects the byte budget but always makes progress', () => {
  const q = new WriteQueue(100, 1000, () => assert.fail('nothing to drop'));
  for (const k of ['a', 'b', 'c']) q.push(w(k, 40));
  assert.deepEqual(
    q.take(10, 30).map((x) => x.key),
    ['a'],
  );
  assert.deepEqual(
    q.take(10, 80).map((x) => x.key),
    ['b', 'c'],
  );
  // A key taken may be queued again.
  q.push(w('a', 1));
  assert.equal(q.length, 1);
});
