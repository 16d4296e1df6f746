// Server-sent events straight to the socket. A write the socket cannot take yet (write() false) pauses the
// producer until 'drain': a slow client holds back its own stream, never the server's memory or others.
import type { ServerResponse } from 'node:http';

export class SseStream {
  private started = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly backpressure: { pause(): void; resume(): void },
  ) {}

  get open(): boolean {
    return !this.res.writableEnded && !this.res.destroyed;
  }

  send(event: unknown): void {
    if (!this.open) return;
    this.head();
    if (!this.res.write(`data: ${JSON.stringify(event)}\n\n`)) {
      this.backpressure.pause();
      this.res.once('drain', () => this.backpressure.resume());
    }
  }

  private head(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  }

  /** Ends the stream with the OpenAI terminator. */
  end(): void {
    if (!this.open) return;
    this.head();
    this.res.end('data: [DONE]\n\n');
  }

  /** An error after the stream began: one error event, then the end (clients raise it as an APIError). */
  error(body: unknown): void {
    if (!this.open) return;
    this.send(body);
    this.res.end();
  }
}
