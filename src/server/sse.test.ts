// SseStream's backpressure: when the socket refuses more (write() false) the producer is paused, and
// resumed on 'drain'; events are framed as `data: JSON` and the stream ends with [DONE].
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { SseStream } from './sse.js';

/** A response whose socket takes 64 bytes and then nothing until released. */
class SlowResponse extends Writable {
  chunks: string[] = [];
  head: Record<string, string> | undefined;
  private held: (() => void)[] = [];
  constructor() {
    super({ highWaterMark: 64 });
  }
  writeHead(_status: number, h: Record<string, string>): this {
    this.head = h;
    return this;
  }
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.chunks.push(chunk.toString());
    this.held.push(cb);
  }
  release(): void {
    for (const cb of this.held.splice(0)) cb();
  }
}

test('a full socket pauses the producer until it drains', async () => {
  const res = new SlowResponse();
  const events: string[] = [];
  const sse = new SseStream(res as unknown as ServerResponse, { pause: () => events.push('pause'), resume: () => events.push('resume') });
  sse.send({ text: 'a' });
  assert.deepEqual(events, []);
  sse.send({ text: 'x'.repeat(100) });
  assert.deepEqual(events, ['pause']);
  res.release();
  await new Promise((r) => setImmediate(r));
  res.release();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['pause', 'resume']);
  sse.end();
  res.release();
  assert.equal(res.head?.['content-type'], 'text/event-stream');
  assert.equal(res.chunks[0], 'data: {"text":"a"}\n\n');
  assert.equal(res.chunks[res.chunks.length - 1], 'data: [DONE]\n\n');
});
