// PrefixCache on its own: hash-chain lookup at chunk depth, key isolation, LRU within a byte budget with
// pins, shared chunks counted once, resume points where the entry's cache is resumable (with a negative
// control), and the remote tier (chunks and resume rows through a ChunkStore).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvCache } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { kvBytes } from '../cache/accounting.js';
import { schemePolicy, schemes } from '../cache/schemes.js';
import { modelFromLoaded, type Model } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { MemoryChunkStore } from '../store/memory-store.js';
import { PrefixCache } from './prefix-cache.js';
import { RemotePrefixTier } from './remote-prefix.js';
import { wholeMatchUnsafe } from './resume-point.js';
import { prefixRoot } from './prefix-key.js';
import { Prng } from '../numeric/prng.js';
import { positionsHeld } from '../../bench/prefix-capacity.js';

const C = 32;
const POLICY: CachePolicy = { k: 'q8_0', v: 'q8_0', window: 8, sinks: 2 };
const model: Model = modelFromLoaded(tinyModel('llama'));
const KEY = prefixRoot('digest-a', POLICY, C);
const seq = (n: number, seed = 1) => Array.from({ length: n }, (_, i) => (i * 7 + seed * 13) % model.nVocab);

function filled(tokens: number[], policy = POLICY): KvCache {
  const c = model.createCache({ policy, capacity: 256, chunkTokens: C });
  model.forward(tokens, c);
  return c;
}

test('lookup finds entries under the same key only, resuming where their cache is resumable', () => {
  const pc = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const toks = seq(100);
  const c = filled(toks);
  pc.insert(KEY, toks, 100, c);
  assert.equal(pc.size, 1);
  // Same first 70 tokens, then different: matched, but the entry keeps no exact rows at 70.
  const other = [...toks.slice(0, 70), ...seq(30, 5)];
  const diverged = pc.lookup(KEY, pc.hashesFor(KEY, other), other);
  assert.deepEqual([diverged.hit, diverged.matched], [null, 70]);
  // The same prompt: one token must stay to feed, so it resumes at 99; a continuation at the entry's end.
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, toks), toks).hit?.keep, 99);
  const more = [...toks, ...seq(20, 7)];
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, more), more).hit?.keep, 100);
  // Another salt, model digest or policy: nothing, whatever the tokens.
  for (const k of [prefixRoot('digest-a', POLICY, C, 'tenant'), prefixRoot('digest-b', POLICY, C), prefixRoot('digest-a', { ...POLICY, k: 'f16' }, C)]) {
    assert.deepEqual(pc.lookup(k, pc.hashesFor(k, toks), toks), { hit: null, matched: 0 });
  }
  // The entry is a fork: the source cache may change without touching it.
  c.rewind(10);
  model.forward(seq(40, 9), c);
  const hit = pc.lookup(KEY, pc.hashesFor(KEY, more), more).hit!;
  assert.equal(hit.entry.cache.length, 100);
  c.dispose();
  pc.clear();
});

test('entries of one conversation share chunks (counted once); LRU evicts within the budget, never a pinned entry', () => {
  const toks = seq(200);
  const c = filled(toks);
  const solo = new PrefixCache({ budgetBytes: 1 << 30, chunkTokens: C });
  solo.insert(KEY, toks, 64, c);
  const small = solo.bytes;
  solo.insert(KEY, toks, 192, c);
  const both = solo.bytes;
  const big = new PrefixCache({ budgetBytes: 1 << 30, chunkTokens: C });
  big.insert(KEY, toks, 192, c);
  // The 64-position entry's chunks are the 192-position entry's first chunks: only its exact regions add.
  assert.ok(both < small + big.bytes, `${both} >= ${small} + ${big.bytes}`);
  big.clear();
  solo.clear();

  // A budget for about two entries of distinct conversations: the least recently used goes.
  const convs = [1, 2, 3].map((s) => seq(100, s));
  const caches = convs.map((t) => filled(t));
  const probe = new PrefixCache({ budgetBytes: 1 << 30, chunkTokens: C });
  probe.insert(KEY, convs[0]!, 100, caches[0]!);
  const one = probe.bytes;
  probe.clear();
  const pc = new PrefixCache({ budgetBytes: Math.floor(2.5 * one), chunkTokens: C });
  pc.insert(KEY, convs[0]!, 100, caches[0]!);
  pc.insert(KEY, convs[1]!, 100, caches[1]!);
  // Touch conversation 0 (pinned, as while a slot restores from it): conversation 1 is evicted instead.
  const next0 = [...convs[0]!, 1];
  const hit0 = pc.lookup(KEY, pc.hashesFor(KEY, next0), next0).hit!;
  pc.pin(hit0.entry);
  pc.insert(KEY, convs[2]!, 100, caches[2]!);
  assert.equal(pc.size, 2);
  assert.ok(pc.bytes <= pc.o.budgetBytes);
  assert.ok(pc.lookup(KEY, pc.hashesFor(KEY, convs[0]!), convs[0]!).matched > 0);
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, convs[1]!), convs[1]!).matched, 0);
  // A budget smaller than one entry keeps only pinned ones.
  const tiny = new PrefixCache({ budgetBytes: 1, chunkTokens: C });
  tiny.insert(KEY, convs[0]!, 100, caches[0]!);
  assert.equal(tiny.size, 0);
  pc.unpin(hit0.entry);
  for (const x of [...caches, c]) x.dispose();
  pc.clear();
});

test('bytes are packed bytes: a q2k entry is several times smaller than an f16 one (head dim 128)', () => {
  const rng = new Prng(5);
  const bytesAt = (policy: CachePolicy) => {
    // A bare cache of a realistic head size (the tiny models' 16-value heads pad q4_0 blocks).
    const c = new KvCache({ layers: 2, kvHeads: 2, headDim: 128, capacity: 256, policy, chunkTokens: C });
    for (let l = 0; l < 2; l++) c.append(l, rng.normals(200 * 256, 1), rng.normals(200 * 256, 1));
    const pc = new PrefixCache({ budgetBytes: 1 << 30, chunkTokens: C });
    pc.insert(prefixRoot('d', policy, C), seq(200), 192, c);
    const b = { packed: pc.packedBytes, allocated: pc.bytes, live: c.nbytes().allocated };
    pc.clear();
    c.dispose();
    return b;
  };
  const f16 = bytesAt({ k: 'f16', v: 'f16', window: 0, sinks: 0 });
  const q2k = bytesAt({ k: 'q2c_0', v: 'q4_0', window: 0, sinks: 0 });
  console.log(
    `prefix entry of 192 positions (2 layers x 2 heads x 128): f16 ${f16.allocated} B, q2k ${q2k.allocated} B allocated (${(f16.allocated / q2k.allocated).toFixed(2)}x); a live q2k cache of 200 positions allocates ${q2k.live} B`,
  );
  // 16 bits against (2.5 + 4.5) / 2: about 4.6x, in what the budget bounds (entries are frozen: no empty staging).
  assert.ok(f16.allocated / q2k.allocated > 4.4, `f16 ${f16.allocated} / q2k ${q2k.allocated}`);
  assert.equal(f16.packed, 192 * 2 * 2 * 128 * 2 * 2);
  for (const b of [f16, q2k]) assert.equal(b.allocated, b.packed);
  // Negative control: the live cache carries the f32 staging of its channel groups.
  assert.ok(q2k.live > q2k.allocated + 2 * 2 * 32 * 128 * 4);
});

const SHAPE = { layers: 2, kvHeads: 2, headDim: 128 };

test('--cache-ram holds positions in proportion to packed bytes: positions per GiB per scheme', () => {
  // Budgets for 16 and 11 f16 entries: the ratios are good to a few percent.
  const [bareBudget, budget] = [2 << 20, 8 << 20];
  const perGiB = (p: number, b = budget) => ((p * 2 ** 30) / b).toFixed(0).padStart(9);
  const held = new Map<string, { bare: number; dflt: number }>();
  for (const name of schemes.keys()) {
    // Bulk only (no exact regions): what the formats alone give.
    const bare = schemePolicy(name, { window: 0, sinks: 0 });
    const b = positionsHeld(SHAPE, bare, bareBudget, 64, 0);
    const want = kvBytes({ ctx: 64, layers: 2, kvHeads: 2, headDim: 128, policy: bare, chunkTokens: C }).total;
    // The budget is spent on packed bytes only: as many entries as the formats' sizes allow.
    assert.equal(b.entryBytes, want, name);
    assert.equal(b.positions, Math.floor(bareBudget / want) * 64, name);
    // The default exact regions (4 sinks, a 128-position f16 window, 96 of it held: 32 positions decoded past the entry).
    held.set(name, { bare: b.positions, dflt: positionsHeld(SHAPE, schemePolicy(name), budget, 256, 32).positions });
  }
  const f16 = held.get('f16')!;
  const rows = [...held].map(
    ([name, h]) =>
      `${name.padEnd(6)} ${perGiB(h.bare, bareBudget)} ${(h.bare / f16.bare).toFixed(2).padStart(5)}x ${perGiB(h.dflt)} ${(h.dflt / f16.dflt).toFixed(2).padStart(5)}x`,
  );
  console.log(
    `positions per GiB of --cache-ram, 2 layers x 2 KV heads x 128 (divide by layers x KV heads / 4 for a model)\nscheme bulk only   vs f16  default window+sinks, 256-position entries\n${rows.join('\n')}`,
  );
  assert.ok(held.get('q2k')!.bare / f16.bare > 4.4, 'q2k holds ~4.6x the positions f16 does');
  // Per-entry exact regions cost the same in every scheme: they narrow the gap, never reverse it.
  for (const [name, h] of held) assert.ok(h.dflt / f16.dflt <= h.bare / f16.bare + 1e-9 && h.dflt >= f16.dflt, name);
});

test('resume points: a snapshot where prompts diverge serves the next one, exactly as a cold prefill', () => {
  const toks = seq(200);
  const c = filled(toks);
  const pc = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  pc.insert(KEY, toks, 200, c);
  const prompt = [...toks.slice(0, 100), ...seq(40, 3)];
  // The finished entry holds the first 100 tokens but not the exact rows a query at 100 (or 96) reads.
  assert.deepEqual(pc.lookup(KEY, pc.hashesFor(KEY, prompt), prompt), { hit: null, matched: 100 });
  // A snapshot at the chunk boundary below the match (a prefill stopped there): its chunks are shared.
  const s96 = filled(toks.slice(0, 96));
  const before = pc.bytes;
  pc.insert(KEY, toks, 96, s96);
  const hit = pc.lookup(KEY, pc.hashesFor(KEY, prompt), prompt).hit!;
  assert.deepEqual([hit.keep, hit.entry.cache.length], [96, 96]);
  // Resumed there, the prompt's logits are a cold prefill's, bit for bit.
  const resumed = hit.entry.cache.fork();
  const cold = model.createCache({ policy: POLICY, capacity: 256, chunkTokens: C });
  assert.deepEqual(Array.from(model.forward(prompt.slice(96), resumed)), Array.from(model.forward(prompt, cold)));
  // Negative control: resuming the finished entry at the whole match without its exact rows differs.
  const unsafe = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C, resume: wholeMatchUnsafe });
  unsafe.insert(KEY, toks, 200, c);
  const bad = unsafe.lookup(KEY, unsafe.hashesFor(KEY, prompt), prompt).hit!;
  assert.equal(bad.keep, 100);
  const wrong = bad.entry.cache.fork();
  wrong.rewind(100);
  assert.notDeepEqual(Array.from(model.forward(prompt.slice(100), wrong)), Array.from(model.forward(prompt.slice(96), hit.entry.cache.fork())));
  console.log(`snapshot at 96 of a 200-position entry: ${pc.bytes - before} B more in the prefix cache`);
  for (const x of [resumed, cold, wrong, c, s96]) x.dispose();
  pc.clear();
  unsafe.clear();
});

test('remote tier: another instance imports the chain with its resume rows and continues exactly as a cold prefill', async () => {
  const store = new MemoryChunkStore();
  const toks = seq(130);
  const at96 = filled(toks.slice(0, 96));
  const newCache = () => model.createCache({ policy: POLICY, capacity: 256, chunkTokens: C });
  const a = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const ra = new RemotePrefixTier(store, { log: () => {} });
  // Three chunks and the resume rows at their end.
  assert.equal(ra.offerPrefill(KEY, toks, at96), 4);
  assert.equal(store.values.size, 4);
  // A fresh cache (another server) sees nothing locally, then pulls the chain in.
  const b = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const rb = new RemotePrefixTier(store, { log: () => {} });
  assert.equal(b.lookup(KEY, b.hashesFor(KEY, toks), toks).hit, null);
  const f = await rb.fetchEntry(b, newCache, KEY, toks);
  const e = f.entry!;
  assert.deepEqual([f.matched, e.hashes.length, e.cache.length, e.remote, e.pins], [96, 3, 96, true, 1]);
  b.unpin(e);
  // Another key asks the store for its own chain: nothing comes back.
  const other = prefixRoot('digest-a', POLICY, C, 'tenant');
  assert.deepEqual(await rb.fetchEntry(b, newCache, other, toks), { entry: null, matched: 0 });
  // Nothing to fetch when the local cache already resumes as deep as the store could.
  assert.equal((await rb.fetchEntry(b, newCache, KEY, toks)).entry, null);
  // A chain without resume rows is matched but not resumable.
  const bare = new MemoryChunkStore();
  for (const [k, v] of store.values) if (!k.endsWith(':resume')) bare.values.set(k, v);
  const rc = new RemotePrefixTier(bare, { log: () => {} });
  assert.deepEqual(await rc.fetchEntry(new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C }), newCache, KEY, toks), { entry: null, matched: 96 });
  // The imported prefix continues with a cold prefill's logits.
  const hit = b.lookup(KEY, b.hashesFor(KEY, toks), toks).hit!;
  assert.equal(hit.keep, 96);
  const remote = hit.entry.cache.fork();
  const cold = newCache();
  assert.deepEqual(Array.from(model.forward(toks.slice(96), remote)), Array.from(model.forward(toks, cold)));
  for (const k of [remote, cold, at96]) k.dispose();
  a.clear();
  b.clear();
});

test('remote tier: resume rows at a boundary inside the first window (r < W + sinks) make the import resumable', () => {
  const policy: CachePolicy = { k: 'q8_0', v: 'q8_0', window: 128, sinks: 4 };
  const toks = seq(64);
  const a = filled(toks, policy);
  const store = new MemoryChunkStore();
  const newCache = () => model.createCache({ policy, capacity: 256, chunkTokens: C });
  const tier = new RemotePrefixTier(store, { log: () => {} });
  tier.offerResumable(new PrefixCache({ budgetBytes: 0, chunkTokens: C }).hashesFor(KEY, [...toks, 0]), a);
  const pc = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const b = new RemotePrefixTier(store, { log: () => {} });
  const prompt = [...toks, 0];
  return b.fetchEntry(pc, newCache, KEY, prompt).then((f) => {
    a.dispose();
    assert.equal(f.entry?.cache.length, 64);
    assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, prompt), prompt).hit?.keep, 64);
  });
});
