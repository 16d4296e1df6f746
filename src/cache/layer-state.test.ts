// The cache state contract (layer-state.ts): state() -> restoreState() rebuilds the same cache, impossible states
// are refused with CacheStateError before anything changes, and no code outside src/cache reaches a layer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { KvCache } from './kvcache.js';
import { LayerCache } from './layer.js';
import { arrayList, type LayerMeta, type LayerState } from './layer-state.js';
import { schemePolicy } from './schemes.js';
import { planLayers, type CachePolicy } from './policy.js';
import { sharedArena } from '../kernels/runtime/arena.js';
import { CacheStateError } from '../errors.js';
import { Prng } from '../numeric/prng.js';
import { fromRoot } from '../../test/paths.js';
import { sourceFiles } from '../../test/source-files.js';

const H = 2;
const D = 64;
const C = 32;

function filled(policy: CachePolicy, n: number): KvCache {
  const cache = new KvCache({ layers: 2, kvHeads: H, headDim: D, capacity: 400, chunkTokens: C, policy });
  const rng = new Prng(7);
  for (const batch of [n - 9, 9]) for (let l = 0; l < 2; l++) cache.append(l, rng.normals(batch * H * D), rng.normals(batch * H * D));
  return cache;
}

const blank = (c: KvCache) =>
  new KvCache({ layers: c.layers, kvHeads: c.kvHeads, headDim: c.headDim, capacity: c.capacity, chunkTokens: c.chunkTokens, policy: c.policy });
const bytesOf = (s: readonly LayerState[]) => s.map((l) => [JSON.stringify(l.meta), ...arrayList(l.arrays).map((a) => Buffer.from(a).toString('hex'))]);

function attendLast(c: KvCache): number[] {
  const q = new Prng(3).normals(2 * H * D);
  const out = new Float32Array(q.length);
  c.attend(1, q, out);
  return Array.from(out);
}

test('state() then restoreState() rebuilds the same cache: same state, same attention; also from a frozen or sliding-window cache', () => {
  const policies: [string, CachePolicy][] = [
    ['q4_0', schemePolicy('q4_0', { window: 16, sinks: 4 })],
    ['q2k (staging)', schemePolicy('q2k', { window: 16, sinks: 4 })],
    ['kivi2 residual', schemePolicy('kivi2', { window: 16, sinks: 2, windowMode: 'residual' })],
    ['anchors', { ...schemePolicy('q4_0', { window: 8, sinks: 2 }), anchors: { count: 8 } }],
    ['sliding window', { ...schemePolicy('q4_0', { window: 8, sinks: 2 }), layers: { 0: { slidingWindow: 40 } } }],
  ];
  for (const [name, policy] of policies) {
    const src = filled(policy, 150);
    if (policy.anchors) {
      src.beginDecode();
      for (let l = 0; l < 2; l++) src.append(l, new Prng(9).normals(5 * H * D), new Prng(10).normals(5 * H * D));
    }
    const want = attendLast(src);
    const state = src.state();
    const back = blank(src);
    back.restoreState(
      state.map((s) => s.meta),
      (i) => state[i]!.arrays,
    );
    assert.deepEqual(bytesOf(back.state()), bytesOf(src.state()), name);
    assert.deepEqual(attendLast(back), want, name);
    assert.equal(back.decodeStart, src.decodeStart, name);
    assert.equal(back.firstHeld(0), src.firstHeld(0), name);
    if (name === 'sliding window') assert.ok(src.firstHeld(0) > 0, 'the case drops chunks');
    // A frozen snapshot's state holds only the rows it reads: rebuilt, it attends the same.
    const snap = src.fork();
    snap.freeze();
    const fs = snap.state();
    const thawed = blank(src);
    thawed.restoreState(
      fs.map((s) => s.meta),
      (i) => fs[i]!.arrays,
    );
    assert.deepEqual(attendLast(thawed), want, `${name} (frozen)`);
    for (const c of [src, back, snap, thawed]) c.dispose();
  }
});

test('an impossible state is refused with CacheStateError naming the layer, before the cache changes', () => {
  const src = filled(schemePolicy('q2k', { window: 16, sinks: 4 }), 100);
  const state = src.state();
  const meta = state.map((s) => s.meta);
  const edit = (i: number, f: (m: LayerMeta) => void): LayerMeta[] => {
    const m = meta.map((x) => structuredClone(x));
    f(m[i]!);
    return m;
  };
  const cases: [string, LayerMeta[], RegExp][] = [
    ['n over capacity', edit(1, (m) => void (m.n = 401)), /layer 1 holds 401 positions, capacity is 400/],
    ['ring past the length', edit(0, (m) => void (m.ringLo = m.n + 1)), /layer 0 has window bounds/],
    ['prompt past the length', edit(0, (m) => void (m.prompt = m.n + 1)), /prompt/],
    ['staged past a group', edit(0, (m) => void (m.k.length = m.k.encoded + 32)), /layer 0 k: .* is impossible/],
    ['chunk count', edit(0, (m) => void (m.v.chunks += 1)), /layer 0 v: 5 chunks held for 100 encoded/],
    ['K and V apart', edit(0, (m) => void (m.v.length -= 1)), /layer 0/],
    [
      'drops without a sliding window',
      edit(0, (m) => void ((m.evicted = 32), (m.k.dropped = 1), (m.v.dropped = 1), (m.k.chunks -= 1), (m.v.chunks -= 1))),
      /keeps every position/,
    ],
  ];
  const target = filled(schemePolicy('q2k', { window: 16, sinks: 4 }), 40);
  const before = bytesOf(target.state());
  for (const [name, m, message] of cases) {
    let asked = 0;
    assert.throws(
      () =>
        target.restoreState(m, (i) => {
          asked++;
          return state[i]!.arrays;
        }),
      (e: unknown) => e instanceof CacheStateError && message.test(e.message),
      name,
    );
    assert.equal(asked, 0, `${name}: no arrays read before every meta is checked`);
    assert.deepEqual(bytesOf(target.state()), before, `${name}: cache unchanged`);
  }
  // Arrays of the wrong size or count: the layer names them.
  const short = { ...state[0]!.arrays, ring: { ...state[0]!.arrays.ring, k: state[0]!.arrays.ring.k.subarray(1) } };
  assert.throws(() => blank(src).restoreState(meta, (i) => (i === 0 ? short : state[i]!.arrays)), /layer 0: region 2 is/);
  const lost = { ...state[1]!.arrays, chunks: { k: state[1]!.arrays.chunks.k.slice(1), v: state[1]!.arrays.chunks.v } };
  assert.throws(() => blank(src).restoreState(meta, (i) => (i === 1 ? lost : state[i]!.arrays)), /layer 1 k: 2 chunks given, the counts say 3/);
  for (const c of [src, target]) c.dispose();
});

test('LayerCache.fromState checks the state of its own plan; a layer keeps its counts private', () => {
  const policy = schemePolicy('q4_0', { window: 16, sinks: 4 });
  const src = filled(policy, 70);
  const plan = planLayers(policy, 2, 400)[0]!;
  const l = LayerCache.fromState(sharedArena(), plan, H, D, C, 400, src.state()[0]!);
  assert.equal(l.length, 70);
  // Compile-time guards: outside code reads the counts only through the state (these lines fail the build if a field turns public).
  // @ts-expect-error n is private
  void l.n;
  // @ts-expect-error the bulk is private
  void l.bulk;
  // @ts-expect-error ringLo is private
  void l.ringLo;
  assert.throws(() => LayerCache.fromState(sharedArena(), plan, H, D, C, 60, src.state()[0]!), CacheStateError);
  l.free();
  src.dispose();
});

/** Layer internals (a layer, its regions, its streams) imported outside src/cache: only the invariance suite's negative-control switch. */
const INTERNAL = /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'[./]*(?:src\/)?cache\/(layer|bulk-tensor|stream|rows)\.js'/g;
const ALLOWED: Record<string, readonly string[]> = { layer: ['batchDependentWindowForTests'] };

test('no code outside src/cache reaches a layer: no import of its internals, no layer handle from KvCache', () => {
  // Negative control: the pattern sees an internal import.
  assert.equal([..."import { LayerCache } from '../cache/layer.js';".matchAll(INTERNAL)].length, 1);
  const found: string[] = [];
  for (const root of ['src', 'test', 'bench']) {
    for (const rel of sourceFiles(root)) {
      if (rel.startsWith('src/cache/')) continue;
      const text = readFileSync(fromRoot(rel), 'utf8');
      for (const m of text.matchAll(INTERNAL)) {
        const names = m[1]!
          .split(',')
          .map((x) => x.trim().replace(/^type\s+/, ''))
          .filter(Boolean);
        const extra = names.filter((x) => !(ALLOWED[m[2]!] ?? []).includes(x));
        if (extra.length) found.push(`${rel}: ${extra.join(', ')} from cache/${m[2]}.js`);
      }
      if (/\.layerCache\(/.test(text)) found.push(`${rel}: layerCache()`);
    }
  }
  assert.deepEqual(found, [], 'read a cache through KvCache (state(), heldChunks(), resumeRows(), ...)');
  assert.equal('layerCache' in KvCache.prototype, false);
});
