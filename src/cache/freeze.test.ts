// KvCache.freeze (prefix-cache entries): a frozen snapshot allocates exactly the exact-region rows that hold
// data, and its forks, cache-file images and accounting equal those of the live cache it was made from.
import test from 'node:test';
import assert from 'node:assert/strict';
import { KvCache } from './kvcache.js';
import { decodeCache, encodeCache } from './file.js';
import { schemes, schemePolicy } from './schemes.js';
import type { CachePolicy } from './policy.js';
import { sharedArena } from '../kernels/runtime/arena.js';
import { Prng } from '../numeric/prng.js';
import { ArgumentError } from '../errors.js';

const H = 2;
const D = 64;
const q = new Prng(7).normals(4 * D);

function rows(seed: number, tokens: number): Float32Array {
  return new Prng(seed).normals(tokens * H * D);
}

function cacheOf(policy: CachePolicy, tokens: number, decode = 0): KvCache {
  const c = new KvCache({ layers: 2, kvHeads: H, headDim: D, capacity: 512, policy, chunkTokens: 32 });
  for (let l = 0; l < 2; l++) c.append(l, rows(10 + l, tokens), rows(20 + l, tokens));
  if (decode > 0) {
    c.beginDecode();
    for (let l = 0; l < 2; l++) c.append(l, rows(30 + l, decode), rows(40 + l, decode));
  }
  return c;
}

function attendAll(c: KvCache, slidingWindow?: number): number[] {
  const out: number[] = [];
  for (let l = 0; l < c.layers; l++) {
    const o = new Float32Array(q.length);
    c.attend(l, q, o, { slidingWindow });
    out.push(...o);
  }
  return out;
}

/** Bytes of the bulk chunks a cache references (shared with its source, not the snapshot's own). */
function chunkBytes(c: KvCache): number {
  let n = 0;
  for (let l = 0; l < c.layers; l++) for (const s of [c.layerCache(l).bulk.k.stream, c.layerCache(l).bulk.v.stream]) n += s.allocatedBytes;
  return n;
}

/** Snapshots as the prefix cache makes them: a fork rewound to `at`, then frozen. */
function snapshot(src: KvCache, at: number): KvCache {
  const f = src.fork();
  f.rewind(at);
  f.freeze();
  return f;
}

test('a frozen snapshot allocates exactly the exact-region rows holding data, for every scheme and window mode', () => {
  let saved = 0;
  for (const s of schemes.keys()) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      // Lengths past the window, inside it, and a snapshot taken right after the positions it keeps.
      for (const [tokens, at] of [
        [200, 96],
        [110, 96],
        [96, 96],
        [40, 32],
        [20, 10],
      ] as const) {
        const policy = schemePolicy(s, { window: 24, sinks: 4, windowMode });
        const src = cacheOf(policy, tokens);
        const live = src.fork();
        live.rewind(at);
        const frozen = snapshot(src, at);
        const a = live.nbytes();
        const b = frozen.nbytes();
        const where = `${s} ${windowMode} ${tokens}->${at}`;
        for (const r of ['sinks', 'anchors', 'bulk', 'window', 'staging', 'total'] as const) assert.equal(b[r], a[r], `${where} ${r}`);
        // Own bytes (beyond the shared chunks) are the exact regions' data, no more; the live fork allocates whole regions.
        assert.equal(b.allocated - chunkBytes(frozen), b.total - b.bulk, where);
        assert.ok(a.allocated - chunkBytes(live) >= b.allocated - chunkBytes(frozen), where);
        saved += a.allocated - b.allocated;
        // Its fork is a live cache that attends, and continues, exactly as the unfrozen fork does.
        const back = frozen.fork();
        assert.equal(back.frozen, false);
        assert.deepEqual(attendAll(back), attendAll(live), where);
        for (const c of [back, live]) for (let l = 0; l < 2; l++) c.append(l, rows(50 + l, 30), rows(60 + l, 30));
        assert.deepEqual(attendAll(back), attendAll(live), `${where}, continued`);
        for (const c of [src, live, frozen, back]) c.dispose();
      }
    }
  }
  // Negative control: live forks allocate whole regions, so freezing must have saved something.
  assert.ok(saved > 0);
});

test('decode anchors: a frozen snapshot keeps the anchors it holds and its forks attend as the live cache', () => {
  const policy = schemePolicy('q2k', { window: 8, sinks: 2, anchors: { count: 6, precision: 'int8' } });
  const src = cacheOf(policy, 50, 20);
  const frozen = src.fork();
  frozen.freeze();
  const b = frozen.nbytes();
  assert.ok(b.anchors > 0);
  // The ring's few slots at anchor positions hold nothing but are kept with their neighbours.
  const own = b.allocated - chunkBytes(frozen);
  assert.ok(own >= b.total - b.bulk && own <= b.total - b.bulk + 6 * 2 * 2 * H * D * 2, `${own} vs ${b.total - b.bulk}`);
  const back = frozen.fork();
  assert.deepEqual(attendAll(back), attendAll(src));
  for (const c of [src, frozen, back]) c.dispose();
});

test('sliding-window layers: a frozen snapshot holds only the positions after the dropped ones', () => {
  for (const windowMode of ['overlay', 'residual'] as const) {
    const src = cacheOf(schemePolicy('q2k', { window: 16, sinks: 4, windowMode, slidingWindow: 40 }), 30);
    for (let t = 0; t < 120; t++) for (let l = 0; l < 2; l++) src.append(l, rows(70 + t, 1), rows(90 + t, 1));
    assert.ok(src.firstHeld(0) > 4, 'the sinks were dropped');
    const frozen = src.fork();
    frozen.freeze();
    const b = frozen.nbytes();
    assert.equal(b.sinks, 0);
    assert.equal(b.allocated - chunkBytes(frozen), b.total - b.bulk, windowMode);
    const back = frozen.fork();
    assert.deepEqual(attendAll(back, 40), attendAll(src, 40), windowMode);
    for (const c of [src, frozen, back]) c.dispose();
  }
});

test('a frozen snapshot writes the cache-file image its live source does, up to rows holding no data', () => {
  for (const s of ['q2k', 'q8_0', 'kivi2']) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      const src = cacheOf(schemePolicy(s, { window: 24, sinks: 4, windowMode }), 150);
      const live = src.fork();
      live.rewind(128);
      const frozen = snapshot(src, 128);
      const img = encodeCache(frozen);
      // Up to the header's ringLo: a snapshot records the first ring row it keeps (a few digits).
      assert.ok(Math.abs(img.length - encodeCache(live).length) < 8);
      const back = decodeCache(img, 'frozen image', (o) => new KvCache(o));
      assert.deepEqual(back.nbytes(), live.nbytes());
      assert.deepEqual(attendAll(back), attendAll(live), `${s} ${windowMode}`);
      for (const c of [src, live, frozen, back]) c.dispose();
    }
  }
});

test('a frozen cache refuses appends, attention and rewinds; disposing it frees its rows', () => {
  const arena = sharedArena();
  const before = arena.allocated;
  const src = cacheOf(schemePolicy('q2k', { window: 16, sinks: 4 }), 70);
  const frozen = snapshot(src, 64);
  assert.equal(frozen.frozen, true);
  assert.throws(
    () => frozen.append(0, rows(1, 1), rows(2, 1)),
    (e: Error) => e instanceof ArgumentError && /frozen/.test(e.message),
  );
  assert.throws(() => frozen.attend(0, q, new Float32Array(q.length)), /frozen/);
  assert.throws(() => frozen.rewind(32), /frozen/);
  assert.throws(() => frozen.beginDecode(), /frozen/);
  assert.equal(frozen.length, 64);
  frozen.freeze(); // twice is a no-op
  src.dispose();
  frozen.dispose();
  assert.equal(arena.allocated, before);
});
