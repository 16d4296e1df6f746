import test from 'node:test';
import assert from 'node:assert/strict';
import { KvCache } from '../cache/kvcache.js';
import { schemePolicy } from '../cache/schemes.js';
import type { CachePolicy } from '../cache/policy.js';
import { attendAll } from '../../test/fixtures/attend-all.js';
import { Prng } from '../numeric/prng.js';
import { ArgumentError, EvictedError, FileFormatError } from '../errors.js';
import { exportChunk, exportResumeRows, importChunks, importResumeRows } from './cache-chunks.js';
import { decodeChunk, encodeChunk } from './chunk-codec.js';

const H = 2;
const D = 64;
const C = 32;
const LAYERS = 2;
const W = 16;
const make = (policy: CachePolicy, capacity = 160): KvCache => makeCache(policy, capacity);

function makeCache(policy: CachePolicy, capacity = 160): KvCache {
  return new KvCache({ layers: LAYERS, kvHeads: H, headDim: D, capacity, policy, chunkTokens: C });
}

/** Appends positions [from, to) of a fixed random sequence to every layer. */
function fill(cache: KvCache, from: number, to: number): void {
  for (let l = 0; l < LAYERS; l++) {
    const k = new Prng(100 + l).normals(to * H * D).subarray(from * H * D);
    const v = new Prng(200 + l).normals(to * H * D).subarray(from * H * D);
    cache.append(l, k, v);
  }
}

/** Attention of fixed random queries (4 heads) at `positions`, every layer. */
function attendAt(cache: KvCache, positions: number[]): Float32Array[] {
  const q = new Prng(8).normals(positions.length * 4 * D);
  return Array.from({ length: LAYERS }, (_, l) => {
    const out = new Float32Array(q.length);
    cache.attend(l, q, out, { positions });
    return out;
  });
}

for (const scheme of ['f16', 'q8_0', 'q4_0', 'q2k', 'kivi2']) {
  test(`${scheme}: imported chunks attend exactly like the source cache rewound to them, before and after more tokens`, () => {
    const policy = schemePolicy(scheme, { window: W, sinks: 4 });
    const a = make(policy);
    // Past 2 chunks + the ring (the window, or 31 rows of an open channel group), so the rewound fork has lost
    // the exact rows below 2C too and reads them from the bulk, as chunks without resume rows do.
    fill(a, 0, 2 * C + Math.max(W, 31) + 8);
    const chunks = [exportChunk(a, 0), exportChunk(a, 1)];
    const ref = a.fork();
    ref.rewind(2 * C);
    const b = make(policy);
    importChunks(b, chunks);
    assert.equal(b.length, 2 * C);
    assert.deepEqual(b.nbytes(), ref.nbytes());
    assert.deepEqual(attendAll(b), attendAll(ref));
    // Chunk by chunk into an empty cache = both at once.
    const c = make(policy);
    importChunks(c, [chunks[0]!]);
    importChunks(c, [chunks[1]!], 1);
    assert.deepEqual(attendAll(c), attendAll(ref));
    fill(b, 2 * C, 2 * C + 40);
    fill(ref, 2 * C, 2 * C + 40);
    assert.deepEqual(attendAll(b), attendAll(ref));
    for (const x of [a, ref, b, c]) x.dispose();
  });
}

for (const scheme of ['q8_0', 'q2k', 'kivi2']) {
  test(`${scheme}: chunks imported into a fork of a prefix entry share the entry's chunks (no copy) and attend as a fresh import`, () => {
    const policy = schemePolicy(scheme, { window: W, sinks: 4 });
    const cap = 6 * C;
    const a = make(policy, cap);
    fill(a, 0, 4 * C + Math.max(W, 31) + 8);
    const chunks = [0, 1, 2, 3].map((c) => exportChunk(a, c));
    // The prefix entry: two chunks, frozen, as the prefix cache keeps them; the request's cache is its fork.
    const entry = make(policy, cap);
    importChunks(entry, chunks.slice(0, 2));
    entry.freeze();
    const fork = entry.fork();
    const entryChunks = entry.heldChunks().map((h) => h.chunk);
    importChunks(fork, chunks.slice(2), 2);
    const mine = fork.heldChunks().map((h) => h.chunk);
    // Shared: the entry's chunk objects (refcounted memory) are the fork's first ones, none copied; the two
    // imported chunks per tensor and layer are the fork's own.
    assert.equal(entryChunks.filter((c) => mine.includes(c)).length, entryChunks.length, 'the fork copied chunks of the prefix entry');
    assert.equal(mine.length - entryChunks.length, 2 * 2 * LAYERS);
    assert.ok(
      entryChunks.every((c) => c.refs === 2),
      'each shared chunk counted by the entry and the fork',
    );
    // Equal outputs: the fork attends as a cache that imported all four chunks fresh, before and after more tokens.
    const fresh = make(policy, cap);
    importChunks(fresh, chunks);
    assert.deepEqual(fork.nbytes(), fresh.nbytes());
    assert.deepEqual(attendAll(fork), attendAll(fresh));
    const before = entry.fork();
    const seen = attendAll(before);
    before.dispose();
    fill(fork, 4 * C, 4 * C + 40);
    fill(fresh, 4 * C, 4 * C + 40);
    assert.deepEqual(attendAll(fork), attendAll(fresh));
    // Copy-on-write kept the entry's bytes: a fork of it attends as before the appends.
    const after = entry.fork();
    assert.deepEqual(attendAll(after), seen);
    for (const x of [a, entry, fork, fresh, after]) x.dispose();
  });
}

test('sink rows travel with the chunk that holds them (negative control: zeroed sink rows change attention)', () => {
  const policy = schemePolicy('q4_0', { window: W, sinks: 4 });
  const a = make(policy);
  fill(a, 0, 2 * C + W);
  const parts = decodeChunk(exportChunk(a, 0));
  assert.ok(parts.every((l) => l[2]!.length > 0 && l[3]!.length > 0));
  assert.ok(decodeChunk(exportChunk(a, 1)).every((l) => l[2]!.length === 0 && l[3]!.length === 0));
  const good = make(policy);
  importChunks(good, [exportChunk(a, 0)]);
  const zeroed = make(policy);
  importChunks(zeroed, [encodeChunk(parts.map(([k, v, sk, sv]) => [k!, v!, new Uint8Array(sk!.length), new Uint8Array(sv!.length)]))]);
  assert.notDeepEqual(attendAll(zeroed), attendAll(good));
  for (const x of [a, good, zeroed]) x.dispose();
});

test('export refuses incomplete, dropped and residual-mode chunks', () => {
  const a = make(schemePolicy('q8_0'));
  fill(a, 0, C + 5);
  assert.throws(
    () => exportChunk(a, 1),
    (e: unknown) => e instanceof ArgumentError && /not complete/.test(e.message),
  );
  assert.throws(() => exportChunk(a, -1), ArgumentError);
  const swa = make(schemePolicy('q8_0', { slidingWindow: C }));
  // Appended a chunk at a time: each batch frees what its first query no longer reads.
  for (let c = 0; c < 4; c++) fill(swa, c * C, (c + 1) * C);
  assert.ok(swa.firstHeld(0) > 0);
  assert.throws(() => exportChunk(swa, 0), EvictedError);
  assert.doesNotThrow(() => exportChunk(swa, 3));
  const residual = make(schemePolicy('q8_0', { windowMode: 'residual' }));
  fill(residual, 0, 2 * C);
  assert.throws(() => exportChunk(residual, 0), /overlay/);
  for (const x of [a, swa, residual]) x.dispose();
});

test('import refuses chunks of another shape or policy, garbage, and caches not at the chunk boundary (nothing changed)', () => {
  const policy = schemePolicy('q4_0', { window: W });
  const a = make(policy);
  fill(a, 0, 2 * C);
  const chunk = exportChunk(a, 0);
  const other = make(schemePolicy('q8_0', { window: W }));
  assert.throws(
    () => importChunks(other, [chunk]),
    (e: unknown) => e instanceof FileFormatError && /parts of/.test(e.message),
  );
  const deeper = new KvCache({ layers: LAYERS + 1, kvHeads: H, headDim: D, capacity: 160, policy, chunkTokens: C });
  assert.throws(() => importChunks(deeper, [chunk]), /has 2 layers, the cache has 3/);
  const b = make(policy);
  assert.throws(() => importChunks(b, [chunk, Buffer.from('garbage')]), FileFormatError);
  assert.equal(b.length, 0);
  assert.equal(b.nbytes().allocated, make(policy).nbytes().allocated);
  assert.throws(() => importChunks(b, [chunk], 1), /starts at 32/);
  fill(b, 0, 5);
  assert.throws(() => importChunks(b, [chunk]), ArgumentError);
  const small = make(policy, 32);
  assert.throws(() => importChunks(small, [chunk, chunk]), /capacity/);
  for (const x of [a, other, deeper, b, small]) x.dispose();
});

// Window 16: the boundary lies past the first window; window 128: inside it (r < W + sinks: the rows start at the sinks).
for (const [scheme, win] of [
  ['q8_0', W],
  ['q4_0', W],
  ['q2k', W],
  ['kivi2', W],
  ['q8_0', 128],
  ['q2k', 128],
] as const) {
  test(`${scheme}, window ${win}: chunks + resume rows at a boundary continue bit for bit like the cache they came from (negative control: chunks alone do not)`, () => {
    const policy = schemePolicy(scheme, { window: win, sinks: 4 });
    const n = 2 * C + win + 8;
    const make = (p: CachePolicy) => makeCache(p, n + 8);
    const a = make(policy);
    fill(a, 0, n); // one batch: the rows below 2C its first queries read are still in its spill
    const chunks = [exportChunk(a, 0), exportChunk(a, 1)];
    const rows = exportResumeRows(a, 2 * C);
    const b = make(policy);
    importChunks(b, chunks);
    assert.equal(b.resumableAt(2 * C), false);
    importResumeRows(b, 2 * C, rows);
    assert.equal(b.resumableAt(2 * C), true);
    fill(b, 2 * C, n);
    // The queries just past the boundary read exact rows below it.
    const at = Array.from({ length: win + 4 }, (_, i) => 2 * C + i);
    assert.deepEqual(attendAt(b, at), attendAt(a, at));
    const bare = make(policy);
    importChunks(bare, chunks);
    fill(bare, 2 * C, n);
    assert.notDeepEqual(attendAt(bare, at), attendAt(a, at));
    // Once a later batch freed the spill, the rows are gone: export refuses rather than guess.
    fill(a, n, n + 1);
    assert.throws(() => exportResumeRows(a, 2 * C), EvictedError);
    assert.throws(() => importResumeRows(make(policy), 2 * C, rows), /holds 0 positions/);
    for (const x of [a, b, bare]) x.dispose();
  });
}
