// The warm-up before ready (llama-server runs one; --no-warmup skips it): it runs a prompt and decode steps on a
// cache of its own, leaves the metrics and the slots as they were, and the CLI says what it ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WarmupReport } from '../../src/server/warmup.js';
import { chatModelPath, metric, serve, serveChild } from './harness.js';

test('the warm-up runs a prompt and decode steps before ready and counts in no metric; noWarmup skips it', async () => {
  const reports: WarmupReport[] = [];
  const s = await serve({ onWarmup: (r) => reports.push(r) });
  try {
    assert.equal(reports.length, 1);
    const r = reports[0]!;
    assert.equal(r.promptTokens, 32);
    // The tiny model's steps take well under the 2 s budget: all 32 run.
    assert.equal(r.steps, 32);
    assert.ok(r.ms > 0);
    assert.equal(await metric(s.url, 'llamacpp:prompt_tokens_total'), 0);
    assert.equal(await metric(s.url, 'llamacpp:n_decode_total'), 0);
    const slots = (await (await fetch(`${s.url}/slots`)).json()) as { n_cached: number }[];
    assert.deepEqual(
      slots.map((x) => x.n_cached),
      [0, 0],
    );
    // The first request then runs as on a server without the warm-up (positive control for the metrics).
    const c = await s.client.completions.create({ model: 'm', prompt: 'hello', max_tokens: 3, temperature: 0 });
    assert.equal(c.usage?.completion_tokens, 3);
    assert.ok((await metric(s.url, 'llamacpp:prompt_tokens_total')) > 0);
  } finally {
    await s.close();
  }
  const skipped: WarmupReport[] = [];
  const t = await serve({ noWarmup: true, onWarmup: (r) => skipped.push(r) });
  await t.close();
  assert.equal(skipped.length, 0);
});

test('a warm-up never outgrows a small context: prompt and steps fit in the slot size', async () => {
  const reports: WarmupReport[] = [];
  const s = await serve({ ctx: 24, parallel: 1, onWarmup: (r) => reports.push(r) });
  await s.close();
  assert.deepEqual(
    reports.map((r) => [r.promptTokens, r.steps]),
    [[12, 12]],
  );
});

test('kvpack serve logs its warm-up, and --no-warmup skips it', async () => {
  const on = await serveChild(['-m', chatModelPath(), '-c', '128', '--cache-ram', '8']);
  await on.close();
  assert.match(on.stderr(), /kvpack serve: warm-up: 32 prompt tokens and 32 decode steps in \d+ ms/);
  const off = await serveChild(['-m', chatModelPath(), '-c', '128', '--cache-ram', '8', '--no-warmup']);
  await off.close();
  assert.doesNotMatch(off.stderr(), /warm-up/);
});
