// Lifecycle: a client that disconnects frees its slot within a step; an exception in one request fails that
// request only (also inside a batched decode step); SIGTERM stops accepting, drains the in-flight stream,
// and the process exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import type { KvCache } from '../../src/cache/kvcache.js';
import { forwardBatch } from '../../src/model/forward.js';
import { fromRoot } from '../paths.js';
import { chatModelPath, metric, post, serve } from './harness.js';

const slotsBusy = async (url: string) => ((await (await fetch(`${url}/slots`)).json()) as { is_processing: boolean }[]).filter((x) => x.is_processing).length;

test('a client that disconnects mid-stream cancels its generation and frees the slot', async () => {
  const s = await serve({ parallel: 1 });
  try {
    const ac = new AbortController();
    const st = await s.client.completions.create(
      { model: 'x', prompt: 'Once upon a time', max_tokens: 450, stream: true, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsStreaming,
      { signal: ac.signal },
    );
    const it = st[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) await it.next();
    ac.abort();
    await it.next().catch(() => {});
    const t0 = performance.now();
    while ((await slotsBusy(s.url)) > 0) await new Promise((r) => setTimeout(r, 2));
    const ms = performance.now() - t0;
    assert.ok(ms < 1000, `slot freed after ${ms.toFixed(0)} ms`);
    // Far fewer than the 450 tokens asked for were generated.
    assert.ok((await metric(s.url, 'llamacpp:tokens_predicted_total')) < 200);
    // And the freed slot serves the next request.
    const r = await s.client.completions.create({
      model: 'x',
      prompt: 'Once',
      max_tokens: 3,
      temperature: 0,
      ignore_eos: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(r.usage!.completion_tokens, 3);
  } finally {
    await s.close();
  }
});

test('an exception in one request fails that request only, also when it throws inside a batched decode step', async () => {
  // A poison token in a prompt marks its cache (a prompt without it clears the mark); once that sequence is
  // decoding, every pass it is in throws, batched or alone.
  const POISON = 7;
  const doomed = new WeakSet<KvCache>();
  const s = await serve({
    parallel: 4,
    runner: (model, seqs) => {
      for (const q of seqs) {
        if (q.tokens.length > 1 && q.tokens.includes(POISON)) doomed.add(q.cache);
        else if (q.tokens.length > 1) doomed.delete(q.cache);
      }
      if (seqs.some((q) => q.tokens.length === 1 && doomed.has(q.cache) && q.cache.length > 12)) throw new Error('injected fault');
      return forwardBatch(model, seqs);
    },
  });
  try {
    const ok = (p: number[]) =>
      s.client.completions.create({
        model: 'x',
        prompt: p,
        max_tokens: 24,
        temperature: 0,
        ignore_eos: true,
        stream: true,
      } as OpenAI.CompletionCreateParamsStreaming);
    const texts = async (st: AsyncIterable<OpenAI.Completion>) => {
      let t = '';
      for await (const c of st) t += c.choices[0]?.text ?? '';
      return t;
    };
    const prompts = [
      [1, 2, 3, 4, 5, 6],
      [9, 10, 11, 12, 13, 14],
      [20, 21, 22, 23, 24, 25],
    ];
    const alone = [];
    for (const p of prompts) alone.push(await texts(await ok(p)));
    const poisoned = ok([1, POISON, 3, 4, 5, 6, 8, 9, 10, 11]).then(texts);
    const others = Promise.all(prompts.map(async (p) => texts(await ok(p))));
    await assert.rejects(poisoned, (e: unknown) => e instanceof OpenAI.APIError && /injected fault/.test(String(e.message)));
    assert.deepEqual(await others, alone);
    // Non-stream: a 500 with the error shape.
    const r = await post(`${s.url}/v1/completions`, { prompt: [POISON, 1, 2, 3, 4, 5], max_tokens: 24, temperature: 0, ignore_eos: true });
    assert.equal(r.status, 500);
    assert.equal(r.json.error.type, 'server_error');
    assert.equal(await slotsBusy(s.url), 0);
  } finally {
    await s.close();
  }
});

test('SIGTERM: new requests are refused, the in-flight stream completes, the process exits 0', async () => {
  const child = spawn(
    process.execPath,
    [fromRoot('bin', 'kvpack.js'), 'serve', '-m', chatModelPath(), '--port', '0', '-c', '512', '--kv', 'q8_0', '-np', '1'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /kvpack serve: (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  const st = await client.completions.create({
    model: 'x',
    prompt: 'Once upon a time',
    max_tokens: 450,
    stream: true,
    temperature: 0,
    ignore_eos: true,
  } as OpenAI.CompletionCreateParamsStreaming);
  const it = st[Symbol.asyncIterator]();
  let chunks = 0;
  let finish: string | null = null;
  await it.next();
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 50));
  // Refused while draining (the stream still has hundreds of tokens to go).
  const late = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt":"x"}' });
  assert.equal(late.status, 503);
  assert.ok(Number(late.headers.get('retry-after')) > 0);
  for (let c = await it.next(); !c.done; c = await it.next()) {
    chunks++;
    finish = c.value.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'length');
  assert.ok(chunks > 400, `${chunks} chunks after SIGTERM`);
  assert.equal(await exited, 0, err);
  assert.match(err, /SIGTERM: draining/);
});
