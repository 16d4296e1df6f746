// One large request cannot stall the server: a body just under --body-limit whose prompt cannot fit the
// context is refused by its size before tokenizing, and a prompt that passes the size check is tokenized in
// slices, stopping at n_ctx, while another client's stream keeps getting tokens.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel } from '../../src/model/model.js';
import { maxBytesPerToken } from '../../src/server/prompt-tokens.js';
import { chatModelPath, rssOf, serveChild } from './harness.js';

const LIMIT = 8 << 20;
const CTX = 512;
// A child process: the clients here must not share the server's event loop (their own 8 MB send would show as its stall).
let s: Awaited<ReturnType<typeof serveChild>>;
before(async () => {
  s = await serveChild(['-m', chatModelPath(), '-c', String(CTX), '--parallel', '2', '--body-limit', String(LIMIT), '--cache-ram', '16']);
});
after(() => s.close());

/** Opens a long greedy stream and records when each SSE chunk arrives. */
async function streamTimes(maxTokens: number): Promise<{ times: number[]; done: Promise<void> }> {
  const r = await fetch(`${s.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true }),
  });
  assert.equal(r.status, 200);
  const times: number[] = [];
  const reader = r.body!.getReader();
  const done = (async () => {
    for (;;) {
      const { done: end } = await reader.read();
      if (end) return;
      times.push(performance.now());
    }
  })();
  return { times, done };
}

/** Largest gap between consecutive chunk arrivals within [from, to]. */
function worstGap(times: number[], from: number, to: number): number {
  let worst = 0;
  for (let i = 1; i < times.length; i++) if (times[i]! >= from && times[i - 1]! <= to) worst = Math.max(worst, times[i]! - times[i - 1]!);
  return worst;
}

async function whileStreaming(body: string): Promise<{ status: number; json: any; gap: number; chunksDuring: number }> {
  const st = await streamTimes(100_000);
  while (st.times.length < 5) await new Promise((r) => setTimeout(r, 5));
  const t0 = performance.now();
  const r = await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const json = await r.json();
  const t1 = performance.now();
  // A few more tokens after the answer, so a stall right at the end shows as a gap.
  const n = st.times.length;
  while (st.times.length < n + 3) await new Promise((r) => setTimeout(r, 5));
  const chunksDuring = st.times.filter((t) => t >= t0 && t <= t1).length;
  const gap = worstGap(st.times, t0, t1);
  await fetch(`${s.url}/slots/0?action=erase`, { method: 'POST' }).catch(() => {});
  return { status: r.status, json, gap, chunksDuring };
}

test('a maximal body (just under --body-limit) is refused by its size while a stream keeps its pace; RSS bounded', async () => {
  const piece = 'Once upon a time ';
  const prompt = piece.repeat(Math.floor((LIMIT - 64) / piece.length));
  const body = JSON.stringify({ prompt, max_tokens: 1 });
  assert.ok(body.length < LIMIT && body.length > LIMIT - 1024);
  const rss0 = rssOf(s.child.pid!);
  const t0 = performance.now();
  const r = await whileStreaming(body);
  const ms = performance.now() - t0;
  const grew = rssOf(s.child.pid!) - rss0;
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'context_length_exceeded');
  assert.match(r.json.error.message, /at least/);
  // The bound is generous against a loaded machine; an 8 MB prompt tokenized on the event loop took 20 s.
  assert.ok(r.gap < 100, `worst inter-token gap ${r.gap.toFixed(1)} ms while the body was refused (${ms.toFixed(0)} ms)`);
  // The body itself (8 MB, twice as a JS string) and its parse; tokenizing it took 1.2 GB.
  assert.ok(grew < 256 << 20, `RSS grew ${(grew / 2 ** 20).toFixed(0)} MiB`);
  console.log(`# refused by size in ${ms.toFixed(0)} ms: worst gap ${r.gap.toFixed(1)} ms, RSS +${(grew / 2 ** 20).toFixed(0)} MiB`);
});

test('a prompt that passes the size check but holds more than n_ctx tokens: tokenized in slices, stopped at n_ctx', async () => {
  const tok = loadModel(chatModelPath()).tokenizer!;
  const ctx = CTX;
  // Bytes just under what the size check lets through: ~ctx x the longest piece, far more tokens than ctx.
  const bytes = ctx * maxBytesPerToken(tok) - 1;
  const prompt = 'a b '.repeat(Math.floor(bytes / 4));
  assert.ok(tok.encode(prompt).length > 4 * ctx, 'the prompt really overflows the context');
  const r = await whileStreaming(JSON.stringify({ prompt, max_tokens: 1 }));
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'context_length_exceeded');
  assert.equal(r.json.error.n_prompt_tokens, ctx, 'counting stopped at n_ctx');
  assert.ok(r.gap < 100, `worst inter-token gap ${r.gap.toFixed(1)} ms`);
  console.log(`# sliced tokenizing: ${r.chunksDuring} stream chunks arrived meanwhile, worst gap ${r.gap.toFixed(1)} ms`);
});

test('chat: the messages\' bytes are checked before the template renders', async () => {
  const content = 'Once upon a time '.repeat(200_000);
  const r = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content }] }) });
  const j = await r.json();
  assert.equal(r.status, 400);
  assert.equal(j.error.code, 'context_length_exceeded');
  assert.match(j.error.message, /at least/);
});
