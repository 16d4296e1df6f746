// Issue 20's reproduction as users ran it: `kvpack serve -m stories260K.gguf --kv q2k -np 1 -c 512`, the same
// story prompt three times (max_tokens 150, temperature 0, ignore_eos). Before the cache was batch-invariant
// the repeats resumed at the whole match on overwritten window rows and told three different stories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type OpenAI from 'openai';
import { fromRoot } from '../paths.js';
import { spawnServe } from './harness.js';
import { STORY_260K, STORY_656K } from './repro-story.js';

for (const [file, prompt] of [
  ['stories260K.gguf', STORY_260K],
  ['tinystories-656k.gguf', STORY_656K],
] as const) {
  const path = fromRoot('..', 'shared', 'models', file);
  const skip = existsSync(path) ? false : `${path} is absent (../shared/models not checked out)`;
  test(`${file} --kv q2k -np 1 -c 512: the same request three times gives three identical answers`, { skip }, async () => {
    const s = await spawnServe(['-m', path, '--kv', 'q2k', '-np', '1', '-c', '512']);
    try {
      const body = { model: 'x', prompt, max_tokens: 150, temperature: 0, ignore_eos: true, logprobs: 1 } as OpenAI.CompletionCreateParamsNonStreaming;
      const got: { text: string; logprobs: (number | null)[]; cached: number }[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await s.client.completions.create(body);
        got.push({ text: r.choices[0]!.text, logprobs: r.choices[0]!.logprobs!.token_logprobs!, cached: r.usage!.prompt_tokens_details?.cached_tokens ?? 0 });
      }
      console.log(`${file}: cached ${got.map((g) => g.cached).join(' / ')}; ${JSON.stringify(got[0]!.text.slice(0, 70))}`);
      assert.equal(got[0]!.cached, 0);
      // The repeats resume from the prompt-end snapshot (one token before the end), not from scratch.
      for (const g of got.slice(1)) {
        assert.ok(g.cached > 0, 'the repeat reused the cache');
        assert.deepEqual({ text: g.text, logprobs: g.logprobs }, { text: got[0]!.text, logprobs: got[0]!.logprobs });
      }
    } finally {
      assert.equal(await s.stop(), 0);
    }
  });
}
