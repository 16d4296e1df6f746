// PrefixCache on its own: hash-chain lookup at chunk depth, key isolation, LRU within a byte budget with
// pins, shared chunks counted once, exactness-aware resume points, and the remote tier (chunks through a ChunkStore).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvCache } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { kvBytes } from '../cache/accounting.js';
import { schemePolicy, schemes } from '../cache/schemes.js';
import { modelFromLoaded, type Model } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { MemoryChunkStore } from '../store/memory-store.js';
import { RemotePrefixTier } from '../store/prefix-tier.js';
import { PrefixCache } from './prefix-cache.js';
import { RemotePrefixes } from './remote-prefix.js';
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

test('lookup finds the deepest whole-chunk prefix under the same key only', () => {
  const pc = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const toks = seq(100);
  const c = filled(toks);
  pc.insert(KEY, toks, 96, c);
  assert.equal(pc.size, 1);
  // Same first 70 tokens, then different: two whole chunks match.
  const other = [...toks.slice(0, 70), ...seq(30, 5)];
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, other), other)?.depth, 2);
  // The whole entry, but one token must stay to feed: a 96-token prompt matches only 2 chunks.
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, toks.slice(0, 96)), toks.slice(0, 96))?.depth, 2);
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, toks), toks)?.depth, 3);
  // Another salt, model digest or policy: nothing, whatever the tokens.
  for (const k of [prefixRoot('digest-a', POLICY, C, 'tenant'), prefixRoot('digest-b', POLICY, C), prefixRoot('digest-a', { ...POLICY, k: 'f16' }, C)]) {
    assert.equal(pc.lookup(k, pc.hashesFor(k, toks), toks), null);
  }
  // The entry is a fork: the source cache may change without touching it.
  c.rewind(10);
  model.forward(seq(40, 9), c);
  const hit = pc.lookup(KEY, pc.hashesFor(KEY, toks), toks)!;
  assert.equal(hit.entry.cache.length, 96);
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
  probe.insert(KEY, convs[0]!, 96, caches[0]!);
  const one = probe.bytes;
  probe.clear();
  const pc = new PrefixCache({ budgetBytes: Math.floor(2.5 * one), chunkTokens: C });
  pc.insert(KEY, convs[0]!, 96, caches[0]!);
  pc.insert(KEY, convs[1]!, 96, caches[1]!);
  // Touch conversation 0 (pinned, as while a slot restores from it): conversation 1 is evicted instead.
  const hit0 = pc.lookup(KEY, pc.hashesFor(KEY, convs[0]!), convs[0]!)!;
  pc.pin(hit0.entry);
  pc.insert(KEY, convs[2]!, 96, caches[2]!);
  assert.equal(pc.size, 2);
  assert.ok(pc.bytes <= pc.o.budgetBytes);
  assert.ok(pc.lookup(KEY, pc.hashesFor(KEY, convs[0]!), convs[0]!));
  assert.equal(pc.lookup(KEY, pc.hashesFor(KEY, convs[1]!), convs[1]!), null);
  // A budget smaller than one entry keeps only pinned ones.
  const tiny = new PrefixCache({ budgetBytes: 1, chunkTokens: C });
  tiny.insert(KEY, convs[0]!, 96, caches[0]!);
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
  console.log(`prefix entry of 192 positions (2 layers x 2 heads x 128): f16 ${f16.allocated} B, q2k ${q2k.allocated} B allocated (${(f16.allocated / q2k.allocated).toFixed(2)}x); a live q2k cache of 200 positions allocates ${q2k.live} B`);
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
  const rows = [...held].map(([name, h]) => `${name.padEnd(6)} ${perGiB(h.bare, bareBudget)} ${(h.bare / f16.bare).toFixed(2).padStart(5)}x ${perGiB(h.dflt)} ${(h.dflt / f16.dflt).toFixed(2).padStart(5)}x`);
  console.log(`positions per GiB of --cache-ram, 2 layers x 2 KV heads x 128 (divide by layers x KV heads / 4 for a model)\nscheme bulk only   vs f16  default window+sinks, 256-position entries\n${rows.join('\n')}`);
  assert.ok(held.get('q2k')!.bare / f16.bare > 4.4, 'q2k holds ~4.6x the positions f16 does');
  // Per-entry exact regions cost the same in every scheme: they narrow the gap, never reverse it.
  for (const [name, h] of held) assert.ok(h.dflt / f16.dflt <= h.bare / f16.bare + 1e-9 && h.dflt >= f16.dflt, name);
});

test('resume points: an entry serves only its exact positions when the rule asks for them', () => {
  const toks = seq(200);
  const c = filled(toks);
  // Exactness required: resume at a multiple of 64 within the entry's exact positions.
  const pc = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C, resume: (m, exact, n) => Math.floor(Math.min(m, exact, n - 16) / 64) * 64 });
  pc.insert(KEY, toks, 192, c, 128);
  const hit = pc.lookup(KEY, pc.hashesFor(KEY, toks), toks)!;
  assert.deepEqual([hit.depth, hit.keep], [6, 128]);
  // An entry with no exact positions is no hit at all; a second, exact entry of the same tokens is added.
  const none = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C, resume: pc.o.resume });
  none.insert(KEY, toks, 192, c, 0);
  assert.equal(none.lookup(KEY, none.hashesFor(KEY, toks), toks), null);
  none.insert(KEY, toks, 96, c, 96);
  assert.deepEqual(none.lookup(KEY, none.hashesFor(KEY, toks), toks)?.keep, 64);
  assert.equal(none.size, 2);
  for (const x of [pc, none]) x.clear();
  c.dispose();
});

test('remote tier: another instance fetches the exact chunks into an entry and continues exactly as the original', async () => {
  const store = new MemoryChunkStore();
  const toks = seq(130);
  const c = filled(toks);
  const newCache = () => model.createCache({ policy: POLICY, capacity: 256, chunkTokens: C });
  const a = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const ra = new RemotePrefixes(new RemotePrefixTier(store, { log: () => {} }), a, newCache);
  // Only chunks inside the exact positions are offered.
  assert.equal(ra.offer(KEY, toks, 100, c), 3);
  assert.equal(store.values.size, 3);
  // A fresh cache (another server) sees nothing locally, then pulls the chain in.
  const b = new PrefixCache({ budgetBytes: 64 << 20, chunkTokens: C });
  const rb = new RemotePrefixes(new RemotePrefixTier(store, { log: () => {} }), b, newCache);
  assert.equal(b.lookup(KEY, b.hashesFor(KEY, toks), toks), null);
  const e = (await rb.fetch(KEY, toks))!;
  assert.deepEqual([e.hashes.length, e.exact, e.remote, e.pins], [3, 96, true, 1]);
  b.unpin(e);
  // Another key asks the store for its own chain: nothing comes back.
  const other = prefixRoot('digest-a', POLICY, C, 'tenant');
  assert.equal(await rb.fetch(other, toks), null);
  // Nothing to fetch when the local cache already resumes as deep as the store could.
  assert.equal(await rb.fetch(KEY, toks), null);
  // Same logits after the fetched prefix as after the original one.
  const local = c.fork();
  local.rewind(96);
  const remote = b.lookup(KEY, b.hashesFor(KEY, toks), toks)!.entry.cache.fork();
  const x = model.forward(toks.slice(96), local);
  const y = model.forward(toks.slice(96), remote);
  assert.deepEqual(Array.from(y), Array.from(x));
  for (const k of [local, remote, c]) k.dispose();
  a.clear();
  b.clear();
});
