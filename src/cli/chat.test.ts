// `kvpack chat` on a tiny random qwen2 model with a trained byte-level BPE vocab: the cache carries over
// between turns (only new tokens are fed, a diverging rendering rewinds), replies equal a from-scratch run,
// and the line loop handles /reset, /exit and errors from piped stdin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { Command, CommanderError } from 'commander';
import { ArgumentError } from '../errors.js';
import type { CachePolicy } from '../cache/policy.js';
import { writeGguf } from '../gguf/writer.js';
import { generate } from '../model/generate.js';
import { loadModel, type Model } from '../model/model.js';
import { crossModel } from '../../test/crosscheck/models.js';
import { fromRoot } from '../../test/paths.js';
import { CHATML, writeChatModel } from '../../test/fixtures/chat-model.js';
import { ChatSession, chatLoop, register as registerChat } from './chat.js';
import { register as registerRun } from './run.js';

const F32: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32', window: 0, sinks: 0 };
// Starts with the message count: every turn's rendering differs from the previous one at the start.
const COUNTING = `{{ messages | length }}${CHATML}`;
const GREEDY = { maxTokens: 6, sampler: { temperature: 0 } };

const dir = mkdtempSync(join(tmpdir(), 'kvpack-chat-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** qwen2 (or gemma3) weights (random) with a trained vocab in place of the placeholder one. */
function chatModel(name: string, template?: string, arch: 'qwen2' | 'gemma3' = 'qwen2'): Model {
  return loadModel(writeChatModel(dir, name, { template, arch }));
}

const chatml = chatModel('chatml', CHATML);

/** Greedy reply tokens from an empty cache: what the turn must produce without any reuse. */
function fromScratch(model: Model, prompt: number[], maxTokens: number): number[] {
  const cache = model.createCache({ policy: F32, capacity: 512 });
  const r = generate(model, cache, prompt, { maxTokens, sampler: { temperature: 0 } });
  cache.dispose();
  return r.tokens;
}

test('the second turn feeds only its new tokens and replies as a from-scratch run would', () => {
  const cache = chatml.createCache({ policy: F32, capacity: 512 });
  const s = new ChatSession(chatml, cache, { ...GREEDY, system: 'Be brief.' });
  assert.equal(s.notice, undefined);
  let streamed = '';
  const first = s.reply('Hello there', (t) => (streamed += t));
  assert.equal(streamed, first.text);
  const p1 = first.prompt.length;
  assert.equal(s.lastTurn.reused, 0);

  const second = s.reply('How are you?', () => {});
  const p2 = s.promptTokens(s.history.slice(0, -1));
  // ChatML renders history append-only: the whole first prompt stays cached.
  assert.ok(s.lastTurn.reused >= p1, `reused ${s.lastTurn.reused} of a ${p1}-token first prompt`);
  assert.equal(s.lastTurn.reused + s.lastTurn.fed, p2.length);
  assert.deepEqual(second.tokens, fromScratch(chatml, p2, GREEDY.maxTokens));
  cache.dispose();
});

test('a rendering that diverges early rewinds the cache to the common prefix', () => {
  const model = chatModel('counting', COUNTING);
  const cache = model.createCache({ policy: F32, capacity: 512 });
  const s = new ChatSession(model, cache, GREEDY);
  const first = s.reply('Hello there', () => {});
  const second = s.reply('And then?', () => {});
  // '1<|im_start|>...' vs '3<|im_start|>...': nothing survives past the count.
  assert.equal(s.lastTurn.reused, 0);
  assert.ok(first.prompt.length > 0);
  assert.deepEqual(second.tokens, fromScratch(model, s.promptTokens(s.history.slice(0, -1)), GREEDY.maxTokens));
  cache.dispose();
});

async function runLines(model: Model, lines: string[], capacity = 512, maxTokens = GREEDY.maxTokens): Promise<{ out: string; err: string }> {
  const cache = model.createCache({ policy: { k: 'f16', v: 'f16', window: 0, sinks: 0 }, capacity });
  const s = new ChatSession(model, cache, { ...GREEDY, maxTokens });
  const output = new PassThrough();
  const error = new PassThrough();
  let out = '';
  let err = '';
  output.on('data', (b: Buffer) => (out += b.toString()));
  error.on('data', (b: Buffer) => (err += b.toString()));
  await chatLoop(s, { input: Readable.from(lines.map((l) => `${l}\n`)), output, error, interactive: false });
  cache.dispose();
  return { out, err };
}

test('piped stdin: /reset starts over (same greedy reply), /exit stops reading', async () => {
  const { out, err } = await runLines(chatml, ['Hello there', '', '/reset', 'Hello there', '/exit', 'never answered']);
  // Replies of a random model may hold newlines: compare with a one-turn run instead of splitting lines.
  const one = (await runLines(chatml, ['Hello there'])).out;
  assert.ok(one.length > 1 && one.endsWith('\n'));
  assert.equal(out, one + one);
  assert.match(err, /conversation reset/);
});

test('a turn that does not fit the context is reported and the loop goes on', async () => {
  const { out, err } = await runLines(chatml, ['Hello there', 'x'.repeat(400), '/reset', 'Hi'], 40);
  assert.match(err, /context holds 40.*\/reset/);
  const hello = (await runLines(chatml, ['Hello there'], 40)).out;
  const hi = (await runLines(chatml, ['Hi'], 40)).out;
  assert.equal(out, hello + hi);
});

test('a reply longer than the context left stops where the context ends, and says so', async () => {
  const probe = new ChatSession(chatml, chatml.createCache({ policy: F32, capacity: 512 }), GREEDY);
  const p = probe.promptTokens([{ role: 'user', content: 'Hello there' }]);
  const want = fromScratch(chatml, p, 3);
  assert.equal(want.length, 3, 'the greedy reply must run past the context for this test to mean anything');
  // Capacity p + 2: room for three reply tokens (the last is never fed back); the turn asks for 50.
  const cache = chatml.createCache({ policy: F32, capacity: p.length + 2 });
  const s = new ChatSession(chatml, cache, { maxTokens: 50, sampler: { temperature: 0 } });
  const r = s.reply('Hello there', () => {});
  assert.deepEqual(r.tokens, want);
  assert.equal(s.lastTurn.contextFull, true);
  assert.ok(cache.length <= cache.capacity);
  cache.dispose();
  const { err } = await runLines(chatml, ['Hello there'], p.length + 2, 50);
  assert.match(err, new RegExp(`context of ${p.length + 2} positions is full`));
});

test('tinystories-656k: the first chat message is answered within the 512-position context, not refused', (t) => {
  const path = fromRoot('..', 'shared', 'models', 'tinystories-656k.gguf');
  if (!existsSync(path)) return void t.skip(`${path} not present`);
  const model = loadModel(path);
  const cache = model.createCache({ policy: { k: 'f16', v: 'f16' }, capacity: Math.min(model.hp.nCtxTrain, 4096) });
  const s = new ChatSession(model, cache, { maxTokens: 512, sampler: { temperature: 0 } });
  const r = s.reply('Once upon a time', () => {});
  assert.ok(r.prompt.length + r.tokens.length - 1 <= cache.capacity);
  assert.ok(r.tokens.length > 0);
  assert.equal(s.lastTurn.contextFull, r.stopReason === 'length');
  cache.dispose();
});

test('no chat template: ChatML stands in, with a notice', () => {
  const model = chatModel('plain');
  const cache = model.createCache({ policy: F32, capacity: 256 });
  const s = new ChatSession(model, cache, GREEDY);
  assert.match(s.notice ?? '', /no chat template.*ChatML/);
  assert.equal(s.reply('Hello', () => {}).prompt.length > 0, true);
  cache.dispose();
});

test('a model without a usable tokenizer is a clear error', () => {
  const path = join(dir, 'placeholder.gguf');
  writeGguf(path, crossModel('llama', { weightType: 'f32' }));
  const model = loadModel(path);
  const cache = model.createCache({ policy: F32, capacity: 64 });
  assert.throws(
    () => new ChatSession(model, cache, GREEDY),
    (e: unknown) => e instanceof ArgumentError && /tokenizer.*placeholder/.test(e.message),
  );
  cache.dispose();
});

test('gemma3: when sliding-window layers dropped what the shared prefix needs, the turn clears and feeds everything', () => {
  // The first message, then the message count: each rendering shares only the first message's tokens.
  const model = chatModel('gemma3-echo', `{{ messages[0]['content'] }}|{{ messages | length }}${CHATML}`, 'gemma3');
  const first = 'Once upon a time there was a little girl who liked to walk in the woods near her house every single day';
  const turns = (policy: CachePolicy) => {
    const cache = model.createCache({ policy, capacity: 1024, chunkTokens: 32 });
    const s = new ChatSession(model, cache, GREEDY);
    s.reply(first, () => {});
    const dropped = cache.firstHeld(0);
    const second = s.reply('And then?', () => {});
    const stats = s.lastTurn;
    const p2 = s.promptTokens(s.history.slice(0, -1));
    cache.dispose();
    return { dropped, second, stats, p2 };
  };
  const swa = turns(F32);
  assert.ok(swa.dropped > 0, 'the first turn dropped chunks on the local layers');
  assert.deepEqual(swa.stats, { reused: 0, fed: swa.p2.length, refilled: true, contextFull: false });
  assert.deepEqual(swa.second.tokens, fromScratch(model, swa.p2, GREEDY.maxTokens));
  // Control: keeping every position, the same turn reuses the shared prefix.
  const all = turns({ ...F32, slidingWindow: 0 });
  assert.ok(all.stats.reused > 10 && !all.stats.refilled, JSON.stringify(all.stats));
  assert.deepEqual(all.second.tokens, swa.second.tokens);
});

test('chat takes -t/--threads exactly as run does (same flag, same validation)', async () => {
  const program = new Command('kvpack').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  registerRun(program);
  registerChat(program);
  const threads = (name: string) => program.commands.find((c) => c.name() === name)!.options.find((o) => o.long === '--threads')!;
  assert.equal(threads('chat').flags, threads('run').flags);
  assert.equal(threads('chat').description, threads('run').description);
  for (const bad of ['0', 'two', '1.5']) {
    await assert.rejects(
      program.parseAsync(['chat', '-m', 'none.gguf', '-t', bad], { from: 'user' }),
      (e: unknown) => e instanceof CommanderError && /-t (must be|expects)/.test(e.message),
      bad,
    );
  }
});
