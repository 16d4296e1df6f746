// Slots: save one slot's cache to a file, restore it into another slot, and the next request there
// evaluates fewer prompt tokens; corrupt, truncated or escaping files are 400s and the server serves on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { metric, post, serve, tmp, type TestServer } from './harness.js';

const dir = join(tmp, 'slots');
mkdirSync(dir, { recursive: true });
const PROMPT = 'Once upon a time there was a little girl who liked to walk in the woods. '.repeat(3);
let s: TestServer;
before(async () => {
  // No prefix cache: what the restored slot reuses can only come from the restored file.
  s = await serve({ parallel: 2, cacheRamBytes: 0, slotSavePath: dir });
});
after(() => s.close());

async function complete(p: string | number[], slot: number): Promise<OpenAI.Completion> {
  return s.client.completions.create({ model: 'x', prompt: p, max_tokens: 4, temperature: 0, id_slot: slot } as OpenAI.CompletionCreateParamsNonStreaming);
}
const slotAction = (id: number, action: string, filename?: string) => post(`${s.url}/slots/${id}?action=${action}`, filename === undefined ? {} : { filename });

test('save slot 0, restore into slot 1: the next request there evaluates only the new tokens', async () => {
  const first = await complete(PROMPT, 0);
  const saved = await slotAction(0, 'save', 'story.kvc');
  assert.equal(saved.status, 200, JSON.stringify(saved.json));
  assert.ok(saved.json.n_saved >= first.usage!.prompt_tokens);
  const restored = await slotAction(1, 'restore', 'story.kvc');
  assert.equal(restored.status, 200, JSON.stringify(restored.json));
  assert.equal(restored.json.n_restored, saved.json.n_saved);
  const slots = (await (await fetch(`${s.url}/slots`)).json()) as { id: number; n_cached: number }[];
  assert.equal(slots[1]!.n_cached, saved.json.n_saved);
  const before = await metric(s.url, 'llamacpp:prompt_tokens_total');
  // The conversation continues where the saved slot ended (a slot resumes only at its own end): its tokens
  // as the sidecar lists them, then new ones (ids: re-tokenizing the text could merge across the seam).
  const held = (JSON.parse(readFileSync(join(dir, 'story.kvc.json'), 'utf8')) as { tokens: number[] }).tokens;
  const follow = [...held, 40, 41, 42];
  const next = await complete(follow, 1);
  const evaluated = (await metric(s.url, 'llamacpp:prompt_tokens_total')) - before;
  assert.ok(next.usage!.prompt_tokens_details!.cached_tokens! >= first.usage!.prompt_tokens - 1);
  assert.ok(evaluated < 10, `evaluated ${evaluated} of ${next.usage!.prompt_tokens}`);
  // Control: an erased slot reuses nothing.
  assert.equal((await slotAction(1, 'erase')).status, 200);
  const fresh = await complete(follow, 1);
  assert.equal(fresh.usage!.prompt_tokens_details!.cached_tokens, 0);
  assert.equal(fresh.choices[0]!.text, next.choices[0]!.text);
});

test('a corrupt, truncated, unmatched or missing slot file is a 400 and the server keeps serving', async () => {
  await complete(PROMPT, 0);
  assert.equal((await slotAction(0, 'save', 'good.kvc')).status, 200);
  const good = readFileSync(join(dir, 'good.kvc'));
  const flipped = Buffer.from(good);
  flipped[flipped.length >> 1] ^= 0xff;
  writeFileSync(join(dir, 'flipped.kvc'), flipped);
  writeFileSync(join(dir, 'flipped.kvc.json'), readFileSync(join(dir, 'good.kvc.json')));
  writeFileSync(join(dir, 'short.kvc'), good.subarray(0, good.length - 100));
  writeFileSync(join(dir, 'short.kvc.json'), readFileSync(join(dir, 'good.kvc.json')));
  writeFileSync(join(dir, 'lonely.kvc'), good);
  for (const f of ['flipped.kvc', 'short.kvc', 'lonely.kvc', 'absent.kvc']) {
    const r = await slotAction(1, 'restore', f);
    assert.equal(r.status, 400, `${f}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.ok(!r.json.error.message.includes(dir), 'no server paths in the message');
  }
  // A sidecar that matches a corrupt file (both forged): the cache file's own checksum catches it.
  const side = JSON.parse(readFileSync(join(dir, 'good.kvc.json'), 'utf8')) as Record<string, unknown>;
  const { createHash } = await import('node:crypto');
  writeFileSync(join(dir, 'forged.kvc'), flipped);
  writeFileSync(join(dir, 'forged.kvc.json'), JSON.stringify({ ...side, cacheSha256: createHash('sha256').update(flipped).digest('hex') }));
  const forged = await slotAction(1, 'restore', 'forged.kvc');
  assert.equal(forged.status, 400);
  assert.match(forged.json.error.message, /checksum|corrupt/);
  for (const f of ['../escape.kvc', '/etc/passwd', '.hidden', '']) assert.equal((await slotAction(0, 'save', f)).status, 400, f);
  assert.equal((await slotAction(0, 'fly', 'x')).status, 400);
  // Still serving, and slot 1 still works.
  assert.equal((await complete(PROMPT, 1)).usage!.completion_tokens, 4);
  rmSync(join(dir, 'flipped.kvc'));
});

test('slot actions without --slot-save-path are refused; a busy slot is a 409', async () => {
  const bare = await serve({ parallel: 1 });
  try {
    const r = await post(`${bare.url}/slots/0?action=save`, { filename: 'x.kvc' });
    assert.equal(r.status, 501);
    assert.match(r.json.error.message, /--slot-save-path/);
    const ac = new AbortController();
    const st = await bare.client.completions.create(
      { model: 'x', prompt: 'Once', max_tokens: 400, stream: true, ignore_eos: true, temperature: 0 } as OpenAI.CompletionCreateParamsStreaming,
      { signal: ac.signal },
    );
    const it = st[Symbol.asyncIterator]();
    await it.next();
    assert.equal((await post(`${bare.url}/slots/0?action=erase`, {})).status, 409);
    ac.abort();
    await it.next().catch(() => {});
  } finally {
    await bare.close();
  }
});
