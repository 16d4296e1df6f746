// Sliding-window retention: a layer whose queries read only the last W positions frees older bulk chunks,
// attends exactly as a keep-everything cache does, counts only what it holds, and refuses (typed) the
// rewinds and reads that would need dropped positions.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvCache } from './kvcache.js';
import { kvBytes } from './accounting.js';
import { schemePolicy } from './schemes.js';
import { planLayers, type CachePolicy } from './policy.js';
import { withSlidingWindows } from './swa.js';
import { checkView } from '../kernels/attention/view.js';
import { sharedArena } from '../kernels/runtime/arena.js';
import { Prng } from '../numeric/prng.js';
import { ArgumentError, EvictedError, FileFormatError, PolicyError } from '../errors.js';

const H = 2;
const D = 32;
const HEADS = 4;
const CHUNK = 32;
const W = 20;
const ROW = H * D;

/** Layer 0 keeps a sliding window of W (unless `keep` overrides it); layer 1 is global. */
function cacheFor(policy: CachePolicy, keep: number = W): KvCache {
  return new KvCache({ layers: 2, kvHeads: H, headDim: D, capacity: 600, chunkTokens: CHUNK, policy: { ...policy, layers: { 0: { slidingWindow: keep } } } });
}

const rows = (seed: number, n: number) => new Prng(seed).normals(n * ROW);

/** Appends `n` positions in batches of `batch` to both layers; returns the batch starts. */
function feed(c: KvCache, from: number, n: number, batch: number): number[] {
  const k = rows(1000 + from, n);
  const v = rows(2000 + from, n);
  const starts: number[] = [];
  for (let t = 0; t < n; t += batch) {
    const m = Math.min(batch, n - t);
    starts.push(c.length);
    for (let l = 0; l < 2; l++) c.append(l, k.subarray(t * ROW, (t + m) * ROW), v.subarray(t * ROW, (t + m) * ROW));
  }
  return starts;
}

function attendLast(c: KvCache, layer: number, window?: number): Float32Array {
  const q = new Prng(c.length).normals(HEADS * D);
  const out = new Float32Array(q.length);
  c.attend(layer, q, out, { slidingWindow: window });
  return out;
}

const POLICIES: [string, CachePolicy][] = [
  ['f16', schemePolicy('f16', { window: 0, sinks: 0 })],
  ['q4_0 overlay', schemePolicy('q4_0', { window: 8, sinks: 2 })],
  ['q2k residual', schemePolicy('q2k', { window: 8, sinks: 3, windowMode: 'residual' })],
  ['kivi2 residual, anchors', schemePolicy('kivi2', { window: 6, sinks: 2, windowMode: 'residual', anchors: { count: 40, precision: 'int8' } })],
];

test('policies: slidingWindow is optional, validated, and the engine merge refuses impossible values naming the field', () => {
  assert.equal(planLayers({ k: 'f16', v: 'f16' }, 2, 1000)[0]!.slidingWindow, 0);
  // Longer than the capacity is fine: such a layer just never drops anything.
  assert.equal(planLayers({ k: 'f16', v: 'f16', layers: { 1: { slidingWindow: 5000 } } }, 2, 1000)[1]!.slidingWindow, 5000);
  assert.throws(
    () => planLayers({ k: 'f16', v: 'f16', slidingWindow: -1 }, 2, 1000),
    (e: unknown) => e instanceof PolicyError && /policy\.slidingWindow/.test(e.message),
  );
  const base: CachePolicy = { k: 'q4_0', v: 'q4_0', layers: { 0: { k: 'f16' } } };
  const merged = withSlidingWindows(base, [16, 16, 0]);
  assert.deepEqual(merged.layers, { 0: { k: 'f16', slidingWindow: 16 }, 1: { slidingWindow: 16 } });
  assert.deepEqual(base.layers, { 0: { k: 'f16' } }, 'the caller policy is not modified');
  // 0 keeps everything; a longer window keeps more; shorter or on a global layer is impossible.
  assert.equal(withSlidingWindows({ ...base, slidingWindow: 0 }, [16, 16, 0]).layers![1], undefined);
  assert.deepEqual(withSlidingWindows({ k: 'f16', v: 'f16', layers: { 1: { slidingWindow: 64 } } }, [16, 16, 0]).layers![1], { slidingWindow: 64 });
  const bad = (p: CachePolicy, re: RegExp) =>
    assert.throws(
      () => withSlidingWindows(p, [16, 16, 0]),
      (e: unknown) => e instanceof PolicyError && re.test(e.message),
      re.source,
    );
  bad(
    { k: 'f16', v: 'f16', layers: { 1: { slidingWindow: 8 } } },
    /policy\.layers\.1\.slidingWindow: 8 on layer 1 is shorter than the model's sliding window 16/,
  );
  bad({ k: 'f16', v: 'f16', slidingWindow: 32 }, /policy\.slidingWindow: 32 on layer 2, which attends over every position/);
});

for (const [name, policy] of POLICIES) {
  test(`${name}: eviction frees whole chunks and attends exactly like keeping everything`, () => {
    for (const batch of [1, 7, 100]) {
      const swa = cacheFor(policy);
      const all = cacheFor(policy, 0);
      let starts: number[] = [];
      for (const c of [swa, all]) {
        starts = feed(c, 0, 60, 60);
        c.beginDecode();
        starts = feed(c, 60, 240, batch);
      }
      const view = swa.view(0);
      checkView(view);
      assert.ok(view.start! > 0 && view.start === swa.firstHeld(0), `${name} batch ${batch}: start ${view.start}`);
      assert.ok(view.segments.every((s) => s.start >= view.start!));
      // The next query (at 300) reads from 281: everything from there on is held.
      assert.ok(view.start! <= 300 - W + 1);
      assert.equal(swa.firstHeld(1), 0, 'the global layer keeps everything');
      assert.deepEqual(attendLast(swa, 0, W), attendLast(all, 0, W), `${name} batch ${batch}`);
      assert.deepEqual(attendLast(swa, 1), attendLast(all, 1));
      // Memory: only what is held is counted, as the closed form says; chunks really were freed.
      const got = swa.nbytes();
      const want = kvBytes({ ctx: 300, layers: 2, kvHeads: H, headDim: D, policy: swa.policy, prompt: 60, batchStart: starts.at(-1), chunkTokens: CHUNK });
      for (const r of ['sinks', 'anchors', 'bulk', 'window', 'staging', 'total'] as const) assert.equal(got[r], want[r], `${name} batch ${batch} ${r}`);
      assert.ok(got.total < all.nbytes().total && got.allocated < all.nbytes().allocated, `${name}: ${got.total} vs ${all.nbytes().total}`);
      swa.dispose();
      all.dispose();
    }
  });
}

test('no attention ever reads freed memory: chunks poisoned on release leave every output unchanged', () => {
  const arena = sharedArena();
  const policy = schemePolicy('q4_0', { window: 4, sinks: 2 });
  const swa = cacheFor(policy);
  const all = cacheFor(policy, 0);
  feed(all, 0, 10, 10);
  feed(swa, 0, 10, 10);
  for (let t = 10; t < 260; t++) {
    const held = swa.layerCache(0).bulk.k.stream.chunks.concat(swa.layerCache(0).bulk.v.stream.chunks);
    const chunkBytes = swa.layerCache(0).bulk.k.stream.chunkBytes;
    feed(swa, t, 1, 1);
    feed(all, t, 1, 1);
    // 0xff bytes decode to NaN scales: any read of a released chunk would poison the output.
    for (const c of held) if (c.refs === 0) arena.u8().fill(0xff, c.offset, c.offset + chunkBytes);
    const a = attendLast(swa, 0, W);
    assert.ok(a.every(Number.isFinite), `step ${t}`);
    assert.deepEqual(a, attendLast(all, 0, W), `step ${t}`);
  }
  assert.ok(swa.firstHeld(0) >= 200);
  swa.dispose();
  all.dispose();
});

test('attention that would reach dropped positions is refused, not silently shortened', () => {
  const c = cacheFor(schemePolicy('q4_0', { window: 4, sinks: 0 }));
  feed(c, 0, 100, 1);
  const start = c.firstHeld(0);
  assert.ok(start > 0);
  const q = new Prng(1).normals(HEADS * D);
  const out = new Float32Array(q.length);
  assert.throws(
    () => c.attend(0, q, out),
    (e: unknown) => e instanceof ArgumentError && /keeps only the last 20 positions/.test(e.message),
  );
  assert.throws(() => c.attend(0, q, out, { slidingWindow: W + 1 }), ArgumentError);
  // A query at an old position would read before the first held one.
  assert.throws(() => c.attend(0, q, out, { slidingWindow: W, positions: [start] }), EvictedError);
  c.attend(0, q, out, { slidingWindow: W, positions: [start + W - 1] });
  c.dispose();
});

test('fork shares chunks with eviction on both sides: each keeps what it needs', () => {
  const policy = schemePolicy('q4_0', { window: 8, sinks: 2 });
  const a = cacheFor(policy);
  feed(a, 0, 150, 1);
  const before = attendLast(a, 0, W);
  const f = a.fork();
  assert.equal(f.firstHeld(0), a.firstHeld(0));
  assert.deepEqual(attendLast(f, 0, W), before);
  // The fork runs on (evicting chunks the original still shares), then the original runs on differently.
  feed(f, 150, 120, 1);
  assert.ok(f.firstHeld(0) > a.firstHeld(0));
  assert.deepEqual(attendLast(a, 0, W), before, 'the original keeps its chunks');
  const ref = cacheFor(policy, 0);
  feed(ref, 0, 150, 1);
  for (const c of [a, ref]) feed(c, 5000, 120, 1);
  assert.deepEqual(attendLast(a, 0, W), attendLast(ref, 0, W));
  f.dispose();
  assert.deepEqual(attendLast(a, 0, W), attendLast(ref, 0, W), 'disposing the fork frees nothing the original holds');
  for (const c of [a, ref]) c.dispose();
});

test('rewind: within the window it works; past it an EvictedError leaves the cache as it was; clear always works', () => {
  // Token-axis formats: a deep rewind of a channel format re-stages decoded values (lossy, see layer.ts).
  const policy = schemePolicy('q4_0', { window: 8, sinks: 2 });
  const c = cacheFor(policy);
  feed(c, 0, 200, 1);
  const start = c.firstHeld(0);
  // The next query at p reads [p - W + 1, p]: fine while that starts at or after the first held position.
  const deepest = start + W - 1;
  assert.ok(c.canRewind(deepest) && !c.canRewind(deepest - 1) && c.canRewind(0) && c.canRewind(500));
  const bytes = c.nbytes();
  assert.throws(
    () => c.rewind(deepest - 1),
    (e: unknown) => e instanceof EvictedError && /clear\(\) and prefill again/.test(e.message),
  );
  assert.throws(() => c.trim(200 - deepest + 1), EvictedError);
  assert.equal(c.length, 200);
  assert.deepEqual(c.nbytes(), bytes, 'a refused rewind changes nothing');
  // Rewinding as deep as allowed and appending again equals never having appended those positions.
  c.rewind(deepest);
  const ref = cacheFor(policy);
  feed(ref, 0, deepest, 1);
  feed(c, 7000, 30, 1);
  feed(ref, 7000, 30, 1);
  assert.deepEqual(attendLast(c, 0, W), attendLast(ref, 0, W));
  c.clear();
  assert.equal(c.firstHeld(0), 0);
  feed(c, 0, 40, 1);
  const fresh = cacheFor(policy);
  feed(fresh, 0, 40, 1);
  assert.deepEqual(attendLast(c, 0, W), attendLast(fresh, 0, W));
  assert.deepEqual(c.nbytes(), fresh.nbytes());
  for (const x of [c, ref, fresh]) x.dispose();
});

test('save -> restore carries the eviction state; files before version 4 are refused; forged eviction is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-swa-'));
  const c = cacheFor(schemePolicy('kivi4', { window: 8, sinks: 2, windowMode: 'residual' }));
  feed(c, 0, 250, 3);
  const f = join(dir, 'c.kvc');
  c.save(f);
  const back = KvCache.restore(f);
  assert.equal(back.firstHeld(0), c.firstHeld(0));
  // The last batch's spill (transient) is not part of the file.
  const { allocated, transient, ...data } = c.nbytes();
  assert.deepEqual(back.nbytes(), { ...data, allocated: allocated - transient, transient: 0 });
  assert.deepEqual(attendLast(back, 0, W), attendLast(c, 0, W));
  feed(back, 9000, 50, 1);
  feed(c, 9000, 50, 1);
  assert.deepEqual(attendLast(back, 0, W), attendLast(c, 0, W));

  const rewrite = (edit: (h: { state: Record<string, unknown>[] } & Record<string, unknown>) => void, version: number) => {
    const good = readFileSync(f);
    const hlen = good.readUInt32LE(8);
    const header = JSON.parse(good.subarray(12, 12 + hlen).toString('utf8'));
    edit(header);
    const json = Buffer.from(JSON.stringify(header));
    const pre = Buffer.from(good.subarray(0, 12));
    pre.writeUInt32LE(version, 4);
    pre.writeUInt32LE(json.length, 8);
    const body = Buffer.concat([pre, json, good.subarray(12 + hlen, good.length - 32)]);
    const p = join(dir, `edited-${version}.kvc`);
    writeFileSync(p, Buffer.concat([body, createHash('sha256').update(body).digest()]));
    return p;
  };
  // A version-1 file (no eviction fields) of a cache that never dropped anything: its ring predates
  // batch-invariant windows (version 4), so it is refused with a clear error; so is a version-3 one.
  const plain = new KvCache({ layers: 1, kvHeads: H, headDim: D, capacity: 200, policy: schemePolicy('q4_0') });
  plain.append(0, rows(1, 50), rows(2, 50));
  plain.save(f);
  const v1 = rewrite((h) => {
    for (const st of h.state) {
      delete st['evicted'];
      for (const w of ['k', 'v']) delete (st[w] as Record<string, unknown>)['dropped'];
    }
  }, 1);
  assert.throws(
    () => KvCache.restore(v1),
    (e: unknown) => e instanceof FileFormatError && /version 1.*re-create the cache/.test(e.message),
  );
  const v3 = rewrite(() => {}, 3);
  assert.throws(
    () => KvCache.restore(v3),
    (e: unknown) => e instanceof FileFormatError && /version 3.*re-create the cache/.test(e.message),
  );
  const v4 = rewrite(() => {}, 4);
  assert.deepEqual(attendLast(KvCache.restore(v4), 0), attendLast(plain, 0));
  // Dropped chunks on a layer whose policy keeps everything: a checksum-valid but impossible file.
  c.save(f);
  const forged = rewrite((h) => {
    (h['policy'] as CachePolicy).layers = {};
  }, 4);
  assert.throws(
    () => KvCache.restore(forged),
    (e: unknown) => e instanceof FileFormatError && /keeps every position/.test(e.message),
  );
  for (const x of [c, back, plain]) x.dispose();
});
