import test from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { registerStoreMetrics, StoreCounters } from './counters.js';

test('counters: plain numbers, mirrored into a prom-client registry (in chunks, bytes and tokens)', async () => {
  const c = new StoreCounters();
  c.add('hitChunks', 2);
  const reg = new Registry();
  registerStoreMetrics(reg, c, { chunkTokens: 256, queueBytes: () => 42 });
  c.add('hitChunks', 1);
  c.add('missChunks', 4);
  c.add('writtenBytes', 1000);
  c.observe('get', 3);
  c.observe('get', 5);
  assert.equal(c.snapshot().hitChunks, 3);
  assert.equal(c.latency.get.count, 2);
  assert.equal(c.latency.get.sumMs, 8);
  const text = await reg.metrics();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  assert.equal(value('kvpack:remote_store_hit_chunks_total'), 3);
  assert.equal(value('kvpack:remote_store_hit_tokens_total'), 3 * 256);
  assert.equal(value('kvpack:remote_store_miss_tokens_total'), 4 * 256);
  assert.equal(value('kvpack:remote_store_written_bytes_total'), 1000);
  assert.equal(value('kvpack:remote_store_errors_total'), 0);
  assert.equal(value('kvpack:remote_store_queue_bytes'), 42);
  assert.match(text, /kvpack:remote_store_latency_seconds_count\{op="get"\} 2/);
});
