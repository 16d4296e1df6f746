// The prefix cache through the server: once two prompts diverged after a shared prefix (the second leaves a
// resume point there), a third on another slot reuses it (cached_tokens > 0, less prefill in /metrics); salts, model files and cache policies never share KV;
// and under concurrent load no slot ever computes with another conversation's KV (llama-server #27148).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type OpenAI from 'openai';
import { MemoryChunkStore } from '../../src/store/memory-store.js';
import { writeChatModel } from '../fixtures/chat-model.js';
import { metric, post, serve, tmp, type TestServer } from './harness.js';

const STORY = 'Once upon a time there was a little girl who liked to walk in the woods near her house. ';
const prompt = (tail: string) => `${STORY.repeat(3)}${tail}`;
const F32 = { k: 'f32', v: 'f32', exact: 'f32' as const, window: 8, sinks: 2 };

async function complete(s: TestServer, p: string | number[], extra: Record<string, unknown> = {}): Promise<OpenAI.Completion> {
  return s.client.completions.create({ model: 'x', prompt: p, max_tokens: 2, temperature: 0, ...extra } as OpenAI.CompletionCreateParamsNonStreaming);
}

const cached = (r: OpenAI.Completion) => r.usage!.prompt_tokens_details?.cached_tokens ?? 0;

test('a third request with the same prefix on another slot is served from the prefix cache', async () => {
  for (const cacheRamBytes of [64 << 20, 0]) {
    const s = await serve({ parallel: 2, cacheRamBytes });
    try {
      await complete(s, prompt('Then she saw a cat.'), { id_slot: 0 });
      // Diverges from the first after the shared prefix: computed cold, it leaves a resume point there.
      assert.equal(cached(await complete(s, prompt('Then she heard a bird.'), { id_slot: 0 })), 0);
      const before = await metric(s.url, 'llamacpp:prompt_tokens_total');
      const r = await complete(s, prompt('Then she met a dog.'), { id_slot: 1 });
      const evaluated = (await metric(s.url, 'llamacpp:prompt_tokens_total')) - before;
      assert.equal(evaluated, r.usage!.prompt_tokens - cached(r));
      if (cacheRamBytes > 0) {
        assert.ok(cached(r) >= 64 && cached(r) % 32 === 0, `cached ${cached(r)}`);
        assert.ok(evaluated < r.usage!.prompt_tokens - 60);
        assert.ok((await metric(s.url, 'kvpack:prefix_cache_entries')) >= 1);
        assert.ok((await metric(s.url, 'kvpack:prefix_cache_hits_tokens_total')) >= cached(r));
      } else {
        // Control: with --cache-ram 0 the other slot computes everything.
        assert.equal(cached(r), 0);
        assert.equal(evaluated, r.usage!.prompt_tokens);
      }
    } finally {
      await s.close();
    }
  }
});

test('cache_salt: a tenant reuses only its own KV, on any slot', async () => {
  const s = await serve({ parallel: 3 });
  try {
    const p = prompt('Alice asked a question.');
    assert.equal(cached(await complete(s, p, { cache_salt: 'alice', id_slot: 0 })), 0);
    // The same tokens under another salt or no salt: nothing reused, not from the slot nor the prefix cache.
    assert.equal(cached(await complete(s, p, { cache_salt: 'bob', id_slot: 0 })), 0);
    assert.equal(cached(await complete(s, p, { id_slot: 1 })), 0);
    // Alice again, elsewhere: the prefix cache has her chunks.
    assert.ok(cached(await complete(s, p, { cache_salt: 'alice', id_slot: 2 })) >= 64);
  } finally {
    await s.close();
  }
});

test('a shared second tier never hands KV across model files or cache policies, and serves the same model', async () => {
  const store = new MemoryChunkStore();
  const other = writeChatModel(tmp, 'tiny-chat-other', { seed: 99 });
  const p = prompt('A shared store.');
  const a = await serve({ chunkStore: store });
  await complete(a, p);
  await a.close();
  assert.ok(store.values.size >= 1);
  for (const o of [{ modelPath: other }, { policy: { k: 'f16', v: 'f16' } }]) {
    const b = await serve({ chunkStore: store, ...o });
    try {
      assert.equal(cached(await complete(b, p)), 0, JSON.stringify(o));
    } finally {
      await b.close();
    }
  }
  const same = await serve({ chunkStore: store });
  try {
    assert.ok(cached(await complete(same, p)) >= 64, 'the same model and policy find the entry in the store');
  } finally {
    await same.close();
  }
});

test('a prefix-cache hit computes exactly what a cold prefill does (q4_0: the same logprobs, bit for bit)', async () => {
  const policy = { k: 'q4_0', v: 'q4_0', window: 16, sinks: 4 };
  const s = await serve({ parallel: 2, policy });
  const cold = await serve({ parallel: 1, policy, cacheRamBytes: 0 });
  try {
    const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 10 + ((i * 31 + seed * 97 + ((i * i) % 13)) % 240));
    const shared = ids(200, 1);
    await complete(s, [...shared, ...ids(30, 2)], { id_slot: 0 });
    await complete(s, [...shared, ...ids(28, 4)], { id_slot: 0 });
    const p = [...shared, ...ids(25, 3)];
    const extra = { id_slot: 1, max_tokens: 6, logprobs: 2, ignore_eos: true };
    const r = await complete(s, p, extra);
    // The second prompt stopped at the chunk boundary below the shared 200 tokens to leave a resume point.
    assert.equal(cached(r), 192);
    const c = await complete(cold, p, { ...extra, id_slot: 0 });
    assert.equal(cached(c), 0);
    assert.deepEqual(r.choices[0]!.logprobs!.token_logprobs, c.choices[0]!.logprobs!.token_logprobs);
    assert.equal(r.choices[0]!.text, c.choices[0]!.text);
  } finally {
    await s.close();
    await cold.close();
  }
});

/** The first generated token's top-5 logprobs, by token text. */
function firstTop(r: OpenAI.Completion): Map<string, number> {
  const top = r.choices[0]!.logprobs!.top_logprobs![0]!;
  return new Map(Object.entries(top));
}

function maxDiff(a: Map<string, number>, b: Map<string, number>): number {
  let d = 0;
  for (const [k, v] of a) d = Math.max(d, Math.abs(v - (b.get(k) ?? -Infinity)));
  return d;
}

test("#27148 regression: under concurrent load every response is computed on its own conversation's KV only", async () => {
  // Six tenants, one conversation each, all sharing a long prefix with the others (but not their salt).
  const convs = Array.from({ length: 6 }, (_, i) => ({
    salt: `tenant-${i}`,
    turns: [prompt(`Question ${i}: where did it go? The ${['cat', 'dog', 'bird', 'fox', 'owl', 'bee'][i]}`)],
  }));
  const ref = await serve({ parallel: 1, cacheRamBytes: 0, policy: F32 });
  const s = await serve({ parallel: 4, policy: F32, cacheRamBytes: 8 << 20 });
  const TOL = 1e-3;
  try {
    const want = async (p: string) => firstTop(await complete(ref, p, { logprobs: 5, max_tokens: 1 }));
    // Negative control: the check tells the conversations apart.
    const r0 = await want(convs[0]!.turns[0]!);
    const r1 = await want(convs[1]!.turns[0]!);
    assert.ok(maxDiff(r0, r1) > 10 * TOL, `distinct conversations have distinct next-token distributions (${maxDiff(r0, r1)})`);
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        convs.map(async (c) => {
          const p = c.turns[c.turns.length - 1]!;
          // Each request also generates a few tokens, so decode steps and prefills interleave across slots.
          const r = await complete(s, p, { cache_salt: c.salt, logprobs: 5, max_tokens: 6 });
          return { c, p, r };
        }),
      );
      for (const { c, p, r } of results) {
        // Round 0: nothing of this tenant is cached yet, so any reuse would be another tenant's KV.
        if (round === 0) assert.equal(cached(r), 0, `${c.salt} reused ${cached(r)} tokens in round 0`);
        else assert.ok(cached(r) > 0, `${c.salt} reused its own conversation in round ${round}`);
        const d = maxDiff(firstTop(r), await want(p));
        assert.ok(d < TOL, `${c.salt} round ${round}: next-token logprobs off by ${d}`);
        // The next turn extends this one's prompt with its reply and a new question.
        c.turns.push(`${p}${r.choices[0]!.text} And then ${round}? The ${c.salt}`);
      }
    }
    assert.ok((await metric(s.url, 'kvpack:prefix_cache_hits_tokens_total')) > 0);
    const slots = (await (await fetch(`${s.url}/slots`)).json()) as { is_processing: boolean }[];
    assert.ok(
      slots.every((x) => !x.is_processing),
      'no slot left busy',
    );
  } finally {
    await s.close();
    await ref.close();
  }
});

test('restoring from the prefix cache works for a channel-axis scheme (q2k) as well', async () => {
  const s = await serve({ parallel: 2, policy: { k: 'q2c_0', v: 'q4_0', window: 16, sinks: 4 } });
  try {
    await complete(s, prompt('One.'), { id_slot: 0 });
    await complete(s, prompt('Two.'), { id_slot: 1 });
    const r = await complete(s, prompt('Four.'), { id_slot: 1 });
    assert.ok(cached(r) >= 64);
    assert.equal((await post(`${s.url}/v1/completions`, { prompt: prompt('Three.'), max_tokens: 4, temperature: 0 })).status, 200);
  } finally {
    await s.close();
  }
});

test('decode anchors: a follow-up reuses at most the previous prompt, never its anchored reply', async () => {
  const policy = { k: 'q4_0', v: 'q4_0', window: 8, sinks: 2, windowMode: 'residual' as const, anchors: { count: 4 } };
  // The slot's own cache is not resumable at the previous prompt's end once it decoded past it: the
  // prompt-end snapshot in the prefix cache is what the follow-up resumes from.
  const s = await serve({ parallel: 1, policy });
  try {
    const p1 = prompt('First.');
    const r1 = await complete(s, p1, { max_tokens: 8, ignore_eos: true });
    const p2 = `${p1}${r1.choices[0]!.text} Second.`;
    const r2 = await complete(s, p2, { max_tokens: 8, ignore_eos: true });
    assert.ok(cached(r2) > 0 && cached(r2) <= r1.usage!.prompt_tokens, `cached ${cached(r2)} of a ${r1.usage!.prompt_tokens}-token first prompt`);
    assert.equal(r2.usage!.completion_tokens, 8);
  } finally {
    await s.close();
  }
});
