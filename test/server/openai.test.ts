// `kvpack serve` through the official openai client over loopback: chat and completions, stream chunk
// shapes, stop strings, usage, logprobs, and every error status with its shape.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { loadModel } from '../../src/model/model.js';
import { chatModelPath, DEFAULTS, post, serve, type Extra, type TestServer } from './harness.js';
import { startServer } from '../../src/server/server.js';

let s: TestServer;
before(async () => {
  s = await serve();
});
after(() => s.close());

const HELLO = [{ role: 'user' as const, content: 'Hello there, how are you?' }];
const greedy = { temperature: 0, ignore_eos: true } as const;

async function chatText(max: number, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await s.client.chat.completions.create({
    model: 'x',
    messages: HELLO,
    max_tokens: max,
    ...greedy,
    ...extra,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  return r.choices[0]!.message.content!;
}

test('chat: a non-stream reply with usage, cached_tokens and llama-server timings', async () => {
  const r = await s.client.chat.completions.create({
    model: 'any',
    messages: HELLO,
    max_tokens: 8,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0]!.message.role, 'assistant');
  assert.equal(r.choices[0]!.finish_reason, 'length');
  assert.ok(r.choices[0]!.message.content!.length > 0);
  assert.equal(r.usage!.completion_tokens, 8);
  assert.equal(r.usage!.total_tokens, r.usage!.prompt_tokens + 8);
  assert.equal(typeof r.usage!.prompt_tokens_details!.cached_tokens, 'number');
  const t = (r as unknown as { timings: Record<string, number> }).timings;
  assert.equal(t['predicted_n'], 8);
  assert.equal(t['prompt_n']! + t['cache_n']!, r.usage!.prompt_tokens);
  // Greedy is deterministic: the same request gives the same text (now partly from the slot's cache).
  assert.equal(await chatText(8), r.choices[0]!.message.content);
});

test('chat stream: role first, one id, content equal to the non-stream reply, a finish chunk without content, a usage chunk, [DONE]', async () => {
  const want = await chatText(12);
  const stream = await s.client.chat.completions.create({
    model: 'x',
    messages: HELLO,
    max_tokens: 12,
    stream: true,
    stream_options: { include_usage: true },
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  assert.deepEqual(chunks[0]!.choices[0]!.delta, { role: 'assistant' });
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  assert.equal(text, want);
  const fin = chunks.findIndex((c) => c.choices[0]?.finish_reason);
  assert.equal(fin, chunks.length - 2, 'the finish chunk comes right before the usage chunk');
  assert.equal(chunks[fin]!.choices[0]!.finish_reason, 'length');
  assert.deepEqual(chunks[fin]!.choices[0]!.delta, {});
  const last = chunks[chunks.length - 1]!;
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage!.completion_tokens, 12);
  // On the wire the stream ends with the terminator.
  const raw = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: HELLO, max_tokens: 3, stream: true, ...greedy }),
  });
  assert.equal(raw.headers.get('content-type'), 'text/event-stream');
  assert.match(await raw.text(), /data: \[DONE\]\n\n$/);
});

test('completions: stream and non-stream agree; a prompt given as token ids works too', async () => {
  const prompt = 'Once upon a time';
  const one = await s.client.completions.create({ model: 'x', prompt, max_tokens: 10, ...greedy } as OpenAI.CompletionCreateParamsNonStreaming);
  assert.equal(one.object, 'text_completion');
  assert.equal(one.usage!.completion_tokens, 10);
  const stream = await s.client.completions.create({
    model: 'x',
    prompt,
    max_tokens: 10,
    stream: true,
    stream_options: { include_usage: true },
    ...greedy,
  } as OpenAI.CompletionCreateParamsStreaming);
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const c of stream) {
    text += c.choices[0]?.text ?? '';
    usage = c.usage ?? usage;
  }
  assert.equal(text, one.choices[0]!.text);
  assert.equal(usage!.completion_tokens, 10);
  const ids = (await post(`${s.url}/tokenize`, { content: prompt })).json.tokens as number[];
  const byIds = await post(`${s.url}/v1/completions`, { prompt: ids, max_tokens: 10, ...greedy });
  assert.equal(byIds.json.choices[0].text, one.choices[0]!.text);
  const back = await post(`${s.url}/detokenize`, { tokens: ids });
  assert.equal(back.json.content, prompt);
});

test('stop strings: text ends before the first stop string, finish_reason stop, nothing of it streamed', async () => {
  const full = await chatText(24);
  // A stop string from the middle of the greedy reply (its first occurrence there).
  const at = Math.floor(full.length / 2);
  const stop = full.slice(at, at + 3);
  const want = full.slice(0, full.indexOf(stop));
  const r = await s.client.chat.completions.create({
    model: 'x',
    messages: HELLO,
    max_tokens: 24,
    stop: ['\u0000never', stop],
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  assert.equal(r.choices[0]!.message.content, want);
  assert.equal(r.choices[0]!.finish_reason, 'stop');
  const stream = await s.client.chat.completions.create({
    model: 'x',
    messages: HELLO,
    max_tokens: 24,
    stop,
    stream: true,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let text = '';
  let finish: string | null = null;
  for await (const c of stream) {
    text += c.choices[0]?.delta.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, want);
  assert.equal(finish, 'stop');
  // Control: without the stop string the reply runs on past it.
  assert.ok(full.length > want.length + stop.length - 1);
});

test('logprobs: chat (top_logprobs) and completions shapes; greedy picks the top entry', async () => {
  const r = await s.client.chat.completions.create({
    model: 'x',
    messages: HELLO,
    max_tokens: 6,
    logprobs: true,
    top_logprobs: 3,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const content = r.choices[0]!.logprobs!.content!;
  assert.equal(content.length, 6);
  for (const e of content) {
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.logprob <= 0);
    assert.ok(e.top_logprobs[0]!.logprob >= e.top_logprobs[1]!.logprob && e.top_logprobs[1]!.logprob >= e.top_logprobs[2]!.logprob);
    assert.equal(e.token, e.top_logprobs[0]!.token);
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0]!.logprob) < 1e-9);
    assert.ok(Array.isArray(e.bytes) && e.bytes.length > 0);
  }
  const stream = await s.client.chat.completions.create({
    model: 'x',
    messages: HELLO,
    max_tokens: 6,
    logprobs: true,
    stream: true,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let n = 0;
  for await (const c of stream) n += c.choices[0]?.logprobs?.content?.length ?? 0;
  assert.equal(n, 6);
  const c = await s.client.completions.create({
    model: 'x',
    prompt: 'Once upon a time',
    max_tokens: 5,
    logprobs: 2,
    ...greedy,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  const lp = c.choices[0]!.logprobs!;
  assert.equal(lp.tokens!.length, 5);
  assert.equal(lp.token_logprobs!.length, 5);
  assert.ok(lp.top_logprobs!.every((m) => Object.keys(m).length >= 1 && Object.keys(m).length <= 2));
  // Without logprobs asked for, none are sent.
  const none = await s.client.completions.create({ model: 'x', prompt: 'Once', max_tokens: 2, ...greedy } as OpenAI.CompletionCreateParamsNonStreaming);
  assert.equal(none.choices[0]!.logprobs, null);
});

test('400: a wrong type or a missing field is named; malformed JSON; n over the limit; a fifth stop string', async () => {
  await assert.rejects(
    s.client.chat.completions.create({ model: 'x', messages: HELLO, max_tokens: '5' as unknown as number }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.status === 400 && /max_tokens/.test(e.message),
  );
  const wrong = await post(`${s.url}/v1/chat/completions`, { messages: HELLO, temperature: 'hot' });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.json.error.param, 'temperature');
  assert.equal(wrong.json.error.type, 'invalid_request_error');
  const missing = await post(`${s.url}/v1/chat/completions`, { max_tokens: 3 });
  assert.equal(missing.status, 400);
  assert.equal(missing.json.error.param, 'messages');
  const nested = await post(`${s.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 7 }] });
  assert.equal(nested.json.error.param, 'messages.0.content');
  const bad = await post(`${s.url}/v1/completions`, '{"prompt": "Once", ');
  assert.equal(bad.status, 400);
  assert.equal(typeof bad.json.error.message, 'string');
  assert.equal((await post(`${s.url}/v1/completions`, { prompt: 'Once', n: 17 })).json.error.param, 'n');
  const five = await post(`${s.url}/v1/completions`, { prompt: 'Once', stop: ['a', 'b', 'c', 'd', 'e'] });
  assert.equal(five.json.error.param, 'stop');
  assert.match(five.json.error.message, /at most 4/);
  assert.equal((await post(`${s.url}/v1/completions`, { prompt: [1, 999999] })).json.error.param, 'prompt.1');
});

test("400 context_length_exceeded: a prompt longer than the slot context, with llama-server's counts", async () => {
  const long = 'Once upon a time there was a girl. '.repeat(80);
  const r = await post(`${s.url}/v1/completions`, { prompt: long, max_tokens: 1 });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.type, 'invalid_request_error');
  assert.equal(r.json.error.code, 'context_length_exceeded');
  assert.equal(r.json.error.n_ctx, DEFAULTS.ctx);
  // Counting stops once the context is full: n_prompt_tokens is then a lower bound.
  assert.ok(r.json.error.n_prompt_tokens >= DEFAULTS.ctx!);
  await assert.rejects(s.client.completions.create({ model: 'x', prompt: long }), (e: unknown) => e instanceof OpenAI.BadRequestError);
});

test('404 for unknown routes and slots; 413 for a body over the limit', async () => {
  const r = await fetch(`${s.url}/v1/nothing`);
  assert.equal(r.status, 404);
  assert.equal(((await r.json()) as { error: { type: string } }).error.type, 'not_found_error');
  assert.equal((await post(`${s.url}/slots/99?action=erase`, {})).status, 404);
  const big = await post(`${s.url}/v1/completions`, { prompt: 'x'.repeat(DEFAULTS.bodyLimit + 10) });
  assert.equal(big.status, 413);
  assert.match(big.json.error.message, /too large/);
  // The server still serves.
  assert.ok((await chatText(2)).length >= 0);
});

test('401 without the API key (health and models stay public)', async () => {
  const k = await serve({ apiKey: 'sekret', parallel: 1 });
  try {
    const wrong = new OpenAI({ baseURL: `${k.url}/v1`, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(
      wrong.chat.completions.create({ model: 'x', messages: HELLO, max_tokens: 1 }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError && e.status === 401,
    );
    assert.equal((await fetch(`${k.url}/metrics`)).status, 401);
    assert.equal((await fetch(`${k.url}/health`)).status, 200);
    assert.equal((await wrong.models.list()).data.length, 1);
    const r = await k.client.chat.completions.create({
      model: 'x',
      messages: HELLO,
      max_tokens: 2,
      ...greedy,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(r.usage!.completion_tokens, 2);
  } finally {
    await k.close();
  }
});

test('429 with retry-after when every slot is busy and the queue is full', async () => {
  const q = await serve({ parallel: 1, queueMax: 0 });
  try {
    const ac = new AbortController();
    const long = await q.client.chat.completions.create(
      { model: 'x', messages: HELLO, max_tokens: 400, stream: true, ...greedy } as OpenAI.ChatCompletionCreateParamsStreaming,
      { signal: ac.signal },
    );
    const it = long[Symbol.asyncIterator]();
    await it.next();
    const r = await post(`${q.url}/v1/chat/completions`, { messages: HELLO, max_tokens: 1 });
    assert.equal(r.status, 429);
    assert.equal(r.json.error.type, 'rate_limit_error');
    assert.ok(Number(r.headers.get('retry-after')) > 0);
    ac.abort();
    await it.next().catch(() => {});
  } finally {
    await q.close();
  }
});

test('503 with retry-after while the model loads; ready afterwards', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = await startServer({ ...DEFAULTS, modelPath: chatModelPath(), load: async (p) => (await gate, loadModel(p)) });
  try {
    const h = await fetch(`${server.url}/health`);
    assert.equal(h.status, 503);
    assert.ok(Number(h.headers.get('retry-after')) > 0);
    assert.equal(((await h.json()) as { error: { type: string } }).error.type, 'unavailable_error');
    assert.equal((await post(`${server.url}/v1/completions`, { prompt: 'Once' })).status, 503);
    release();
    await server.ready;
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  } finally {
    await server.shutdown();
  }
});

test('GET /v1/models lists the model; an id_slot outside the slots is a 400', async () => {
  const m = await s.client.models.list();
  assert.equal(m.data[0]!.id, 'tiny-chat.gguf');
  const r = await post(`${s.url}/v1/completions`, { prompt: 'Once', id_slot: 7 } satisfies Extra & { prompt: string });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'id_slot');
});

test('/metrics: llama-server names, compressed cache bytes by region, effective bits, prefix counters, latency histograms', async () => {
  await chatText(6);
  const text = await (await fetch(`${s.url}/metrics`)).text();
  for (const name of [
    'llamacpp:prompt_tokens_total',
    'llamacpp:tokens_predicted_total',
    'llamacpp:requests_processing',
    'llamacpp:requests_deferred',
    'llamacpp:n_decode_total',
    'kvpack:prefix_cache_queries_tokens_total',
    'kvpack:prefix_cache_hits_tokens_total',
    'kvpack:prefix_cache_misses_total',
    'kvpack:prefix_cache_entries',
    'kvpack:time_to_first_token_seconds_bucket',
    'kvpack:inter_token_latency_seconds_count',
  ]) {
    assert.match(text, new RegExp(`^${name}(\\{[^}]*\\})? `, 'm'), name);
  }
  const bulk = Number(/^kvpack:kv_cache_bytes\{region="bulk"\} (\S+)$/m.exec(text)![1]);
  assert.ok(bulk > 0);
  // q8_0 bulk (8.5 bits) for every position, plus f16 copies of the window and sinks (overlay): above 8.5,
  // below 8.5 + 16 however short the contexts.
  const bits = Number(/^kvpack:kv_cache_effective_bits (\S+)$/m.exec(text)![1]);
  assert.ok(bits > 8.5 && bits < 24.5, `effective bits ${bits}`);
  assert.ok(Number(/^llamacpp:tokens_predicted_total (\S+)$/m.exec(text)![1]) >= 6);
});
