// The short `npm run load`: 16 concurrent streaming clients against a `kvpack serve` child process for five
// seconds (enough streams even with the shared cores busy), with disconnects, malformed JSON, oversized
// bodies and wrong types mixed in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadOk, loadRun, printReport, type LoadRunOptions } from '../../bench/load.js';
import { chatModelPath } from './harness.js';

test('load: 16 clients with faults mixed in; no error, no leaked slot, memory in bounds', async () => {
  const o: LoadRunOptions = { model: chatModelPath(), seconds: 5, clients: 16, parallel: 4, kv: 'q8_0', cacheRamMiB: 16, ctx: 512 };
  const r = await loadRun(o);
  printReport(o, r);
  assert.deepEqual(r.errors, []);
  assert.equal(r.leakedSlots, 0);
  // The mix really ran, however slow the machine (throughput is bench/load.ts's figure, not a threshold here):
  // every client sends its first request before the deadline, and the seeded first requests of 16 clients
  // are 12 streams, 3 bad requests and 1 disconnect.
  const mix = JSON.stringify({ requests: r.requests, streams: r.streams, disconnects: r.disconnects, faults: r.faults });
  assert.ok(r.requests >= o.clients && r.streams > 0 && r.disconnects > 0 && r.faults > 0, mix);
  assert.ok(loadOk(r));
});
