// Continuous batching through the server: concurrent greedy streams give the tokens sequential runs give,
// and the decode steps really are shared (fewer forward passes than tokens; not so without batching).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type OpenAI from 'openai';
import { fromRoot } from '../paths.js';
import { metric, serve, type TestServer } from './harness.js';

const PROMPTS = ['Once upon a time', 'The little dog ran', 'She looked at the sky and', 'One day a bird'];
const MAX = 16;

async function stream(s: TestServer, prompt: string): Promise<string> {
  const st = await s.client.completions.create({
    model: 'x',
    prompt,
    max_tokens: MAX,
    temperature: 0,
    stream: true,
    ignore_eos: true,
  } as OpenAI.CompletionCreateParamsStreaming);
  let text = '';
  for await (const c of st) text += c.choices[0]?.text ?? '';
  return text;
}

/** Texts of the prompts run one after another, then all at once; and the forward passes the concurrent run took. */
async function runBoth(s: TestServer): Promise<{ sequential: string[]; concurrent: string[]; passes: number }> {
  const sequential: string[] = [];
  for (const p of PROMPTS) sequential.push(await stream(s, p));
  // Other slots hold these prompts now: the concurrent run must not lean on them, so erase every slot.
  for (let i = 0; i < PROMPTS.length; i++) await fetch(`${s.url}/slots/${i}?action=erase`, { method: 'POST' });
  const before = await metric(s.url, 'llamacpp:n_decode_total');
  const concurrent = await Promise.all(PROMPTS.map((p) => stream(s, p)));
  return { sequential, concurrent, passes: (await metric(s.url, 'llamacpp:n_decode_total')) - before };
}

for (const batching of [true, false]) {
  test(`concurrent greedy streams equal sequential runs (${batching ? 'batched decode' : 'no batching: control'})`, async () => {
    // f32 weights (the tiny model expands): under 8 rows every batch uses the same row kernel as one row.
    const s = await serve({ parallel: 4, batching, cacheRamBytes: 0 });
    try {
      const r = await runBoth(s);
      assert.deepEqual(r.concurrent, r.sequential);
      assert.ok(r.sequential.every((t) => t.length > 0));
      const decodeTokens = PROMPTS.length * (MAX - 1);
      console.log(`${batching ? 'batched' : 'unbatched'}: ${r.passes} forward passes for ${decodeTokens} decode tokens`);
      if (batching) assert.ok(r.passes < decodeTokens * 0.6, `${r.passes} forward passes for ${decodeTokens} decode tokens`);
      else assert.ok(r.passes >= decodeTokens, `${r.passes} forward passes for ${decodeTokens} decode tokens`);
    } finally {
      await s.close();
    }
  });
}

test('stories260K.gguf: concurrent streams tell the same coherent stories as sequential runs', async (t) => {
  const path = fromRoot('..', 'shared', 'models', 'stories260K.gguf');
  if (!existsSync(path)) return void t.skip(`${path} not present`);
  const s = await serve({ modelPath: path, parallel: 4, policy: { k: 'f16', v: 'f16' }, cacheRamBytes: 0 });
  try {
    const r = await runBoth(s);
    assert.deepEqual(r.concurrent, r.sequential);
    assert.match(r.sequential[0]!, /^, there was a little girl named Lily/);
  } finally {
    await s.close();
  }
});
