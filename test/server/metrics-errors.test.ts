// /metrics counts what the clients saw: 404s of unknown routes are request errors; a client that hangs up
// half-way through sending its body is not a 400 (nobody got an answer).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { serve, type TestServer } from './harness.js';

let s: TestServer;
before(async () => {
  s = await serve();
});
after(() => s.close());

async function errors(status: string): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const m = new RegExp(`^kvpack:request_errors_total\\{status="${status}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

test('404s of unknown routes are counted', async () => {
  const before = await errors('404');
  assert.equal((await fetch(`${s.url}/v1/nothing`)).status, 404);
  assert.equal((await fetch(`${s.url}/v2/chat`, { method: 'POST' })).status, 404);
  assert.equal(await errors('404'), before + 2);
});

test('an aborted half-sent body is not counted as a 400; a malformed one is (positive control)', async () => {
  const { port } = new URL(s.url);
  const before = await errors('400');
  for (let i = 0; i < 3; i++) {
    await new Promise<void>((resolve) => {
      const sock = connect(Number(port), '127.0.0.1', () => {
        sock.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"prompt": "Once upon');
        setTimeout(() => sock.destroy(), 50);
      });
      sock.on('close', () => resolve());
      sock.on('error', () => {});
    });
  }
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(await errors('400'), before, 'aborted uploads are not 400s');
  const bad = await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt": ' });
  assert.equal(bad.status, 400);
  assert.equal(await errors('400'), before + 1);
});
