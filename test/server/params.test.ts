// Every OpenAI parameter kvpack accepts does something, through the official openai client: logit_bias,
// presence/frequency penalties, n (choices forked from one prefill), prompt batches, echo with the prompt's
// own logprobs (lm-evaluation-harness's local-completions request), and the fields it refuses by name.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { loadModel } from '../../src/model/model.js';
import { tokenLogprob } from '../../src/model/logprobs.js';
import { argmax } from '../../src/model/sampler.js';
import { DEFAULTS, chatModelPath, post, serve, type TestServer } from './harness.js';

let s: TestServer;
before(async () => {
  s = await serve();
});
after(() => s.close());

type Body = Record<string, unknown>;
let salt = 0;
/** A completion with its own cache salt: a cold prefill, never a cached prefix. */
async function complete(body: Body): Promise<OpenAI.Completion> {
  return await s.client.completions.create({ model: 'x', cache_salt: `p${salt++}`, ...body } as unknown as OpenAI.CompletionCreateParamsNonStreaming);
}
const greedy = { temperature: 0, ignore_eos: true } as const;
const ids = async (text: string) => (await post(`${s.url}/tokenize`, { content: text })).json.tokens as number[];
const PROMPT = 'Once upon a time';

test('logit_bias: -100 bans the greedy token, +100 forces one (token ids as string keys)', async () => {
  const model = loadModel(chatModelPath());
  const p = await ids(PROMPT);
  // The greedy first token, from the model itself over a cache of the server's policy.
  const first = argmax(model.forward(p, model.createCache({ policy: DEFAULTS.policy, capacity: DEFAULTS.ctx! })));
  const one = async (extra: Body) =>
    (await post(`${s.url}/v1/completions`, { prompt: p, max_tokens: 1, ...greedy, logprobs: 1, cache_salt: `b${salt++}`, ...extra })).json.choices[0].logprobs;
  // Logprobs are of the raw distribution: the greedy pick has the top logprob, a banned one does not.
  const plain = await one({});
  const best = Object.values(plain.top_logprobs[0] as Record<string, number>)[0]!;
  assert.ok(Math.abs(plain.token_logprobs[0] - best) < 1e-9);
  assert.ok(
    Math.abs(
      plain.token_logprobs[0] - tokenLogprob(model.forward(p, model.createCache({ policy: DEFAULTS.policy, capacity: DEFAULTS.ctx! })), first, 0).logprob,
    ) < 1e-4,
  );
  const banned = await one({ logit_bias: { [first]: -100 } });
  assert.ok(banned.token_logprobs[0] < best - 1e-6, `banned token ${first} still chosen`);
  const forced = await post(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: 5, ...greedy, logit_bias: { '42': 100 } });
  assert.equal(forced.json.choices[0].text, (await post(`${s.url}/detokenize`, { tokens: [42, 42, 42, 42, 42] })).json.content);
  const out = await post(`${s.url}/v1/completions`, { prompt: PROMPT, logit_bias: { '99999999': 1 } });
  assert.equal(out.status, 400);
  assert.equal(out.json.error.param, 'logit_bias');
  const word = await post(`${s.url}/v1/completions`, { prompt: PROMPT, logit_bias: { hello: 1 } });
  assert.equal(word.status, 400);
  assert.equal(word.json.error.param, 'logit_bias.hello');
});

test('presence and frequency penalties change greedy output and cut repetition; 0 is the plain output', async () => {
  const run = async (extra: Body) => (await complete({ prompt: PROMPT, max_tokens: 48, ...greedy, logprobs: 0, ...extra })).choices[0]!.logprobs!.tokens!;
  const repeats = (t: string[]) => t.length - new Set(t).size;
  const plain = await run({});
  assert.deepEqual(await run({ presence_penalty: 0, frequency_penalty: 0 }), plain);
  const freq = await run({ frequency_penalty: 2 });
  const pres = await run({ presence_penalty: 2 });
  assert.notDeepEqual(freq, plain);
  assert.notDeepEqual(pres, plain);
  assert.ok(repeats(plain) > 0, 'the plain output repeats (else the test shows nothing)');
  assert.ok(
    repeats(freq) < repeats(plain) && repeats(pres) < repeats(plain),
    `repeats: plain ${repeats(plain)}, frequency ${repeats(freq)}, presence ${repeats(pres)}`,
  );
});

test('n: choices forked from one prefill, each as a single request with seed + j; usage counts the prompt once', async () => {
  const body = { prompt: PROMPT, max_tokens: 12, temperature: 1, top_k: 0, top_p: 1, min_p: 0, ignore_eos: true, seed: 7 };
  const r = await complete({ ...body, n: 3 });
  assert.deepEqual(
    r.choices.map((c) => c.index),
    [0, 1, 2],
  );
  for (let j = 0; j < 3; j++) assert.equal(r.choices[j]!.text, (await complete({ ...body, seed: 7 + j })).choices[0]!.text, `choice ${j}`);
  assert.ok(new Set(r.choices.map((c) => c.text)).size > 1, 'the choices differ (sampling at temperature 1)');
  const promptTokens = (await ids(PROMPT)).length;
  assert.equal(r.usage!.prompt_tokens, promptTokens);
  assert.equal(r.usage!.completion_tokens, 36);
  // Chat too, streamed: chunks carry their choice's index.
  const stream = await s.client.chat.completions.create({
    model: 'x',
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 6,
    n: 2,
    stream: true,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  const text = ['', ''];
  const finish: (string | null)[] = [null, null];
  for await (const c of stream) {
    for (const ch of c.choices) {
      text[ch.index] += ch.delta.content ?? '';
      finish[ch.index] = ch.finish_reason ?? finish[ch.index]!;
    }
  }
  assert.deepEqual(finish, ['length', 'length']);
  assert.equal(text[0], text[1], 'greedy choices agree');
  assert.ok(text[0]!.length > 0);
});

test('prompt batches: strings or token-id arrays, one choice each, in order', async () => {
  const a = 'Once upon a time';
  const b = 'The little dog';
  const one = async (p: unknown) => (await complete({ prompt: p, max_tokens: 6, ...greedy })).choices[0]!.text;
  const both = await complete({ prompt: [a, b], max_tokens: 6, ...greedy });
  assert.deepEqual(
    both.choices.map((c) => c.text),
    [await one(a), await one(b)],
  );
  const byIds = await complete({ prompt: [await ids(a), await ids(b)], max_tokens: 6, ...greedy, n: 2 });
  assert.deepEqual(
    byIds.choices.map((c) => c.index),
    [0, 1, 2, 3],
  );
  assert.deepEqual(
    byIds.choices.map((c) => c.text),
    [await one(a), await one(a), await one(b), await one(b)],
  );
});

test("echo + logprobs: lm-evaluation-harness local-completions scoring; the prompt's logprobs are the model's own", async () => {
  const context = await ids('Once upon a time, there was a');
  const continuation = await ids(' little girl');
  const prompt = [...context, ...continuation];
  // The request local-completions sends for loglikelihood (tokenized_requests): a batch of token lists.
  const r = await post(`${s.url}/v1/completions`, { model: 'x', prompt: [prompt], temperature: 0, max_tokens: 1, logprobs: 1, seed: 1234, echo: true });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const lp = r.json.choices[0].logprobs;
  assert.equal(lp.token_logprobs.length, prompt.length + 1);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  // The reference: teacher-forced logits of the same model over a cache of the server's policy.
  const model = loadModel(chatModelPath());
  const all = model.forward(prompt, model.createCache({ policy: DEFAULTS.policy, capacity: DEFAULTS.ctx! }), { allLogits: true });
  const V = model.nVocab;
  for (let i = 1; i < prompt.length; i++) {
    const want = tokenLogprob(all.subarray((i - 1) * V, i * V), prompt[i]!, 1);
    assert.ok(Math.abs(lp.token_logprobs[i] - want.logprob) < 1e-4, `position ${i}: ${lp.token_logprobs[i]} vs ${want.logprob}`);
  }
  // What the harness computes: the continuation's summed logprob and whether it is greedy.
  const slice = lp.token_logprobs.slice(context.length, -1) as number[];
  const tops = lp.top_logprobs.slice(context.length, -1) as Record<string, number>[];
  assert.equal(slice.length, continuation.length);
  assert.ok(Number.isFinite(slice.reduce((a, b) => a + b, 0)));
  assert.ok(tops.every((t) => Object.keys(t).length === 1));
  assert.ok(r.json.choices[0].text.startsWith('Once upon a time, there was a little girl'));
  // max_tokens 0: the prompt alone.
  const zero = await post(`${s.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 0, echo: true, logprobs: 0 });
  assert.equal(zero.json.choices[0].text, 'Once upon a time');
  assert.equal(zero.json.choices[0].logprobs.tokens.length, (await ids('Once upon a time')).length);
  // Echo without logprobs: the text only; streamed, the prompt comes first.
  const echoed = await complete({ prompt: PROMPT, max_tokens: 4, echo: true, ...greedy });
  const plain = await complete({ prompt: PROMPT, max_tokens: 4, ...greedy });
  assert.equal(echoed.choices[0]!.text, PROMPT + plain.choices[0]!.text);
  const stream = await s.client.completions.create({
    model: 'x',
    prompt: PROMPT,
    max_tokens: 4,
    echo: true,
    stream: true,
    logprobs: 0,
    ...greedy,
  } as OpenAI.CompletionCreateParamsStreaming);
  let text = '';
  let n = 0;
  for await (const c of stream) {
    text += c.choices[0]?.text ?? '';
    n += c.choices[0]?.logprobs?.tokens?.length ?? 0;
  }
  assert.equal(text, echoed.choices[0]!.text);
  assert.equal(n, (await ids(PROMPT)).length + 4);
});

test('refused by name (400): suffix, best_of != n, tools, tool_choice, functions, response_format other than text, unknown fields', async () => {
  const cases: [string, Body, string][] = [
    ['/v1/completions', { prompt: 'a', suffix: 'b' }, 'suffix'],
    ['/v1/completions', { prompt: 'a', best_of: 2 }, 'best_of'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], tools: [{ type: 'function', function: { name: 'f' } }] }, 'tools'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], tool_choice: 'auto' }, 'tool_choice'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], functions: [{ name: 'f' }] }, 'functions'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], response_format: { type: 'json_object' } }, 'response_format'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], frobnicate: 1 }, 'frobnicate'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], echo: true }, 'echo'],
    ['/v1/chat/completions', { messages: [{ role: 'alien', content: 'a' }] }, 'messages.0.role'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: null }] }, 'messages.0.content'],
    // The chat templates read role and content only: a participant name would be dropped.
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a', name: 'bob' }] }, 'messages.0.name'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], top_logprobs: 2 }, 'top_logprobs'],
    ['/v1/completions', { prompt: [1, -3] }, 'prompt.1'],
  ];
  for (const [path, body, param] of cases) {
    const r = await post(`${s.url}${path}`, body);
    assert.equal(r.status, 400, `${param}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.param, param, JSON.stringify(r.json));
    assert.equal(r.json.error.code, null);
    assert.ok(r.json.error.message.includes(param.split('.').pop()!), r.json.error.message);
  }
  assert.match(
    (await post(`${s.url}/v1/chat/completions`, { messages: [{ role: 'alien', content: 'a' }] })).json.error.message,
    /one of "system", "developer", "user", "assistant"/,
  );
  assert.match((await post(`${s.url}/v1/completions`, { prompt: [1, -3] })).json.error.message, />= 0/);
  // Accepted as OpenAI allows: best_of == n, response_format text, tool_choice none, an empty tools list.
  for (const extra of [{ best_of: 1 }, { response_format: { type: 'text' } }, { tool_choice: 'none', tools: [] }]) {
    const r = await post(`${s.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'a' }], max_tokens: 1, ...extra });
    assert.equal(r.status, 200, JSON.stringify(extra));
  }
});

test('GET /v1/models/{id} (the SDK\'s models.retrieve); a lowercase "bearer" scheme is accepted', async () => {
  const list = await s.client.models.list();
  const id = list.data[0]!.id;
  const m = await s.client.models.retrieve(id);
  assert.equal(m.id, id);
  await assert.rejects(s.client.models.retrieve('other-model'), (e: unknown) => e instanceof OpenAI.NotFoundError);
  const keyed = await serve({ apiKey: 'k3y' });
  try {
    const ok = await fetch(`${keyed.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'bearer k3y' },
      body: JSON.stringify({ prompt: 'a', max_tokens: 1 }),
    });
    assert.equal(ok.status, 200);
    const bad = await fetch(`${keyed.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'bearer nope' },
      body: JSON.stringify({ prompt: 'a', max_tokens: 1 }),
    });
    assert.equal(bad.status, 401);
    assert.equal((await bad.json()).error.code, null);
  } finally {
    await keyed.close();
  }
});
