// One generation loop (model/generation-loop.ts) behind serve and the library's generate() (run, chat, the
// page): a stop string cuts text and logprobs alike (a token is returned only when its text begins before
// the cut), nothing of a partial stop match is streamed, and chunks without content carry no logprobs.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type OpenAI from 'openai';
import { fromRoot } from '../paths.js';
import { generate } from '../../src/model/generate.js';
import { loadModel } from '../../src/model/model.js';
import { DEFAULTS, chatModelPath, post, serve, type TestServer } from './harness.js';

let s: TestServer;
before(async () => {
  s = await serve();
});
after(() => s.close());

const PROMPT = 'Once upon a time';
const greedy = { temperature: 0, ignore_eos: true } as const;

/** The greedy completion's tokens (texts) and a stop string that starts inside token k and ends inside token k + 1. */
async function straddlingStop(): Promise<{ pieces: string[]; full: string; stop: string; k: number }> {
  const r = await post(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: 24, logprobs: 0, ...greedy });
  const pieces = r.json.choices[0].logprobs.tokens as string[];
  const full = r.json.choices[0].text as string;
  for (let k = 2; k + 1 < pieces.length; k++) {
    const a = pieces[k]!;
    const b = pieces[k + 1]!;
    if (a.length < 2 || b.length < 1) continue;
    const stop = a.slice(-1) + b.slice(0, 1);
    const start = pieces.slice(0, k).join('').length + a.length - 1;
    if (full.indexOf(stop) === start) return { pieces, full, stop, k };
  }
  throw new Error(`no token pair to straddle in ${JSON.stringify(pieces)}`);
}

test('a stop string cuts the logprobs too: tokens whose text begins after the cut are not returned', async () => {
  const { pieces, full, stop, k } = await straddlingStop();
  const want = full.slice(0, full.indexOf(stop));
  const r = await post(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: 24, logprobs: 0, stop, ...greedy });
  const c = r.json.choices[0];
  assert.equal(c.text, want);
  assert.equal(c.finish_reason, 'stop');
  // Token k begins before the cut (its first characters are in the text); token k + 1 is cut off.
  assert.deepEqual(c.logprobs.tokens, pieces.slice(0, k + 1));
  assert.equal(c.logprobs.token_logprobs.length, k + 1);
  // Chat: the same through the SDK, streamed; every chunk with logprobs has content, and they add up.
  const chat = await s.client.chat.completions.create({
    model: 'x',
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 24,
    logprobs: true,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const cp = chat.choices[0]!.logprobs!.content!.map((e) => e.token);
  const ck = cp.findIndex((t, i) => i >= 2 && t.length >= 2 && (cp[i + 1]?.length ?? 0) >= 1);
  assert.ok(ck > 0, 'a chat token pair to straddle');
  const cstop = cp[ck]!.slice(-1) + cp[ck + 1]!.slice(0, 1);
  const ctext = chat.choices[0]!.message.content!;
  const cut = ctext.indexOf(cstop);
  const stream = await s.client.chat.completions.create({
    model: 'x',
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 24,
    logprobs: true,
    stop: cstop,
    stream: true,
    ...greedy,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let text = '';
  const toks: string[] = [];
  for await (const ch of stream) {
    const d = ch.choices[0];
    if (!d) continue;
    const got = d.logprobs?.content ?? [];
    if (got.length > 0) assert.ok((d.delta.content ?? '').length > 0, 'a chunk with logprobs has content');
    toks.push(...got.map((e) => e.token));
    text += d.delta.content ?? '';
  }
  assert.equal(text, ctext.slice(0, cut));
  // Exactly the tokens whose text begins before the cut.
  let at = 0;
  const want2 = cp.filter((t) => {
    const keep = at < cut;
    at += t.length;
    return keep;
  });
  assert.deepEqual(toks, want2);
});

test('generate() (run, chat, the page) runs the same loop: same text as serve, no part of a stop string ever shown', async () => {
  const { full, stop } = await straddlingStop();
  const model = loadModel(chatModelPath());
  const prompt = (await post(`${s.url}/tokenize`, { content: PROMPT })).json.tokens as number[];
  const withBos = model.tokenizer!.encode(PROMPT, { parseSpecial: true });
  const shown: string[] = [];
  const r = generate(model, model.createCache({ policy: DEFAULTS.policy, capacity: DEFAULTS.ctx! }), withBos, {
    maxTokens: 24,
    sampler: { temperature: 0 },
    eos: [],
    stop: [stop],
    onText: (t) => shown.push(t),
  });
  assert.ok(prompt.length > 0);
  assert.equal(r.text, full.slice(0, full.indexOf(stop)));
  assert.equal(r.stopReason, 'stop');
  // What was shown is the text: the stop string's first character, generated one token before the match
  // completed, was held back and never shown.
  assert.equal(shown.join(''), r.text);
  // Control: without the stop string the same run shows it (and the rest).
  const shownFree: string[] = [];
  generate(model, model.createCache({ policy: DEFAULTS.policy, capacity: DEFAULTS.ctx! }), withBos, {
    maxTokens: 24,
    sampler: { temperature: 0 },
    eos: [],
    onText: (t) => shownFree.push(t),
  });
  assert.equal(shownFree.join(''), full);
});

test('a partial stop match that does not complete is released, in order', async () => {
  const { full, stop } = await straddlingStop();
  // The first character of the stop string, then something that never follows it.
  const never = `${stop[0]}\u0000`;
  const r = await post(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: 24, stop: never, ...greedy });
  assert.equal(r.json.choices[0].text, full);
  assert.equal(r.json.choices[0].finish_reason, 'length');
});

test('kvpack run --stop prints the text before the stop string and nothing of it (the same loop)', () => {
  const run = (prompt: string, ...extra: string[]) =>
    spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), 'run', '-m', chatModelPath(), '-p', prompt, '-n', '24', '--temp', '0', '-c', '512', ...extra], {
      encoding: 'utf8',
      timeout: 60_000,
    });
  // A prompt whose greedy continuation does not end at EOS right away (run stops at EOS; serve above ignored it).
  let prompt = '';
  let free = '';
  for (const p of ['Once upon a time', 'The little dog', 'She looked at the sky and said', 'Tom had a red ball. He', 'Hello there']) {
    const r = run(p);
    assert.equal(r.status, 0, r.stderr);
    free = r.stdout.replace(/\n$/, '');
    prompt = p;
    if (free.length >= 8) break;
  }
  assert.ok(free.length >= 8, `some prompt continues: ${JSON.stringify(free)}`);
  const stop = free.slice(4, 6);
  const stopped = run(prompt, '--stop', stop);
  assert.equal(stopped.status, 0, stopped.stderr);
  assert.equal(stopped.stdout.replace(/\n$/, ''), free.slice(0, free.indexOf(stop)));
  assert.match(stopped.stderr, /stop: stop/);
});
