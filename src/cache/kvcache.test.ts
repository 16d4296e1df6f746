import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { KvCache, type AttentionPrecision } from './kvcache.js';
import { kvBytes } from './accounting.js';
import { schemes, schemePolicy } from './schemes.js';
import type { CachePolicy } from './policy.js';
import { Prng } from '../numeric/prng.js';
import { readStored } from '../kernels/attention/dequantize.js';
import { attendNaive } from '../kernels/attention/naive.js';
import { attendReference } from '../kernels/attention/reference.js';
import { roundFp16 } from '../numeric/half.js';
import { FileAccessError, FileFormatError, NonFiniteError, PolicyError, ArgumentError } from '../errors.js';

const H = 2;
const D = 64;
const HEADS = 4;

function rows(seed: number, tokens: number): Float32Array {
  return new Prng(seed).normals(tokens * H * D);
}

function filled(
  policy: CachePolicy,
  tokens: number,
  opts: { layers?: number; batch?: number; capacity?: number; attention?: AttentionPrecision } = {},
): { cache: KvCache; k: Float32Array[]; v: Float32Array[] } {
  const layers = opts.layers ?? 2;
  const cache = new KvCache({ layers, kvHeads: H, headDim: D, capacity: opts.capacity ?? 1024, policy, attention: opts.attention });
  const k: Float32Array[] = [];
  const v: Float32Array[] = [];
  for (let l = 0; l < layers; l++) {
    k.push(rows(100 + l, tokens));
    v.push(rows(200 + l, tokens));
    const b = opts.batch ?? tokens;
    for (let t = 0; t < tokens; t += b) {
      const n = Math.min(b, tokens - t);
      cache.append(l, k[l]!.subarray(t * H * D, (t + n) * H * D), v[l]!.subarray(t * H * D, (t + n) * H * D));
    }
  }
  return { cache, k, v };
}

function attendOut(cache: KvCache, layer: number, q: Float32Array): Float32Array {
  const out = new Float32Array(q.length);
  cache.attend(layer, q, out);
  return out;
}

function maxRel(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num = Math.max(num, Math.abs(a[i]! - b[i]!));
    den = Math.max(den, Math.abs(b[i]!));
  }
  return num / den;
}

const q = new Prng(7).normals(HEADS * D);
const quantSchemes = [...schemes.keys()].filter((s) => s !== 'f16');

test('negative control: an all-f32 cache attends exactly like float64 attention over the inputs', () => {
  for (const windowMode of ['overlay', 'residual'] as const) {
    const { cache, k, v } = filled({ k: 'f32', v: 'f32', exact: 'f32', window: 16, sinks: 4, windowMode }, 100);
    for (let l = 0; l < 2; l++) {
      assert.deepEqual(readStored(cache.view(l), 'k'), k[l]);
      assert.deepEqual(readStored(cache.view(l), 'v'), v[l]);
      const want = attendNaive(q, k[l]!, v[l]!, HEADS, H, D);
      assert.ok(maxRel(attendOut(cache, l, q), want) < 1e-6);
    }
    cache.dispose();
  }
});

test('negative control: every layer of a quantized cache stores values that differ from the input', () => {
  for (const s of quantSchemes) {
    const { cache, k, v } = filled(schemePolicy(s, { window: 0, sinks: 0 }), 64, { layers: 3 });
    const report: string[] = [];
    for (let l = 0; l < 3; l++) {
      for (const [w, x] of [
        ['k', k[l]!],
        ['v', v[l]!],
      ] as const) {
        const got = readStored(cache.view(l), w);
        let num = 0;
        let den = 0;
        for (let i = 0; i < x.length; i++) {
          num += (got[i]! - x[i]!) ** 2;
          den += x[i]! ** 2;
        }
        const rel = Math.sqrt(num / den);
        report.push(`L${l}.${w}=${rel.toFixed(4)}`);
        assert.ok(rel > 1e-3, `${s} layer ${l} ${w}: relative error ${rel} means it was not quantized`);
      }
    }
    console.log(`# ${s}: ${report.join(' ')}`);
    cache.dispose();
  }
});

test('window and sinks read exact (f16) over the quantized bulk; other positions read quantized', () => {
  for (const windowMode of ['overlay', 'residual'] as const) {
    const { cache, k } = filled(schemePolicy('q2k', { window: 40, sinks: 4, windowMode }), 200);
    const view = cache.view(0);
    const got = readStored(view, 'k');
    for (let p = 0; p < 200; p++) {
      const exact = p < 4 || p >= 160;
      for (let i = 0; i < H * D; i++) {
        const x = k[0]![p * H * D + i]!;
        const y = got[p * H * D + i]!;
        if (exact) assert.equal(y, roundFp16(x), `${windowMode}: position ${p} should be exact`);
      }
      if (!exact) assert.notDeepEqual(got.subarray(p * H * D, (p + 1) * H * D), k[0]!.subarray(p * H * D, (p + 1) * H * D));
    }
    const regions = new Set(view.segments.map((s) => s.region));
    assert.ok(regions.has('sinks') && regions.has('window') && regions.has('bulk'), [...regions].join());
    cache.dispose();
  }
});

test('packed attention equals dequantize-then-float attention', () => {
  for (const s of quantSchemes) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      const { cache } = filled(schemePolicy(s, { window: 24, sinks: 4, windowMode }), 150);
      const view = cache.view(1);
      const want = attendNaive(q, readStored(view, 'k'), readStored(view, 'v'), HEADS, H, D);
      assert.ok(maxRel(attendOut(cache, 1, q), want) < 2e-5, `${s} ${windowMode}`);
      cache.dispose();
    }
  }
});

test('causal prefill over the cache equals per-position decode: each query reads its own window exact', () => {
  const { cache } = filled(schemePolicy('q2k', { window: 16, sinks: 2 }), 70);
  const positions = [0, 5, 31, 32, 69];
  const qs = new Prng(9).normals(positions.length * HEADS * D);
  const out = new Float32Array(qs.length);
  cache.attend(0, qs, out, { positions });
  const view = cache.view(0);
  const row = HEADS * D;
  positions.forEach((p, i) => {
    const qi = qs.subarray(i * row, (i + 1) * row);
    const want = attendNaive(qi, readStored(view, 'k', p), readStored(view, 'v', p), HEADS, H, D, [p]);
    assert.ok(maxRel(out.subarray(i * row, (i + 1) * row), want) < 2e-5, `query at ${p}`);
    const alone = new Float32Array(row);
    cache.attend(0, qi, alone, { positions: [p] });
    assert.deepEqual(alone, out.subarray(i * row, (i + 1) * row), `query at ${p}: alone and in the batch, the same bits`);
  });
  cache.dispose();
});

test('a position leaving the window is encoded exactly once (residual), every position once (overlay)', () => {
  for (const s of ['q4_0', 'q2k', 'kivi2']) {
    const policy = schemePolicy(s, { window: 32, sinks: 4, windowMode: 'residual' });
    const { cache } = filled(policy, 300, { batch: 1 });
    const calls = cache.encodeCalls(0);
    // 300 - 4 sinks - 32 window = 264 positions in the bulk; channel formats encode whole groups of 32.
    const k = cache.layerCache(0).bulk.k.stream.format;
    const v = cache.layerCache(0).bulk.v.stream.format;
    assert.equal(calls.k, k.axis === 'token' ? 264 : Math.floor(264 / 32));
    assert.equal(calls.v, v.axis === 'token' ? 264 : Math.floor(264 / 32));
    cache.dispose();
  }
  const { cache } = filled(schemePolicy('q4_0', { window: 32, windowMode: 'overlay' }), 300, { batch: 7 });
  assert.deepEqual(cache.encodeCalls(1), { k: 300, v: 300 });
  cache.dispose();
});

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'kvpack-cache-'));
}

test('cache bytes do not depend on batching: one batch vs token by token vs odd batches', () => {
  const dir = tmp();
  for (const s of ['q2k', 'kivi4', 'q4_0', 'nf4']) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      const policy = schemePolicy(s, { window: 20, sinks: 3, windowMode });
      const files = [1, 7, 1000].map((batch) => {
        const { cache } = filled(policy, 150, { batch });
        const f = join(dir, `${s}-${windowMode}-${batch}.kvc`);
        cache.save(f);
        cache.dispose();
        return readFileSync(f);
      });
      assert.ok(files[0]!.equals(files[1]!) && files[0]!.equals(files[2]!), `${s} ${windowMode}`);
    }
  }
});

test('save -> restore gives identical attention for every scheme and both window modes', () => {
  const dir = tmp();
  for (const s of [...schemes.keys()]) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      const { cache } = filled(schemePolicy(s, { window: 16, sinks: 4, windowMode, anchors: { count: 8, precision: 'int8' } }), 90);
      cache.beginDecode();
      const extra = rows(5, 12);
      for (let l = 0; l < 2; l++) cache.append(l, extra, extra);
      const f = join(dir, `${s}-${windowMode}.kvc`);
      cache.save(f);
      const back = KvCache.restore(f);
      for (let l = 0; l < 2; l++) assert.deepEqual(attendOut(back, l, q), attendOut(cache, l, q), `${s} ${windowMode}`);
      // The last batch's spill (transient) is not part of the file.
      const { allocated, transient, ...data } = cache.nbytes();
      assert.deepEqual(back.nbytes(), { ...data, allocated: allocated - transient, transient: 0 });
      cache.dispose();
      back.dispose();
    }
  }
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('.tmp-')),
    [],
    'no temp files left behind',
  );
});

test('restore rejects truncated, corrupted and wrong-version files with a typed error', () => {
  const dir = tmp();
  const { cache } = filled(schemePolicy('q2k'), 64);
  const f = join(dir, 'good.kvc');
  cache.save(f);
  const good = readFileSync(f);
  const cases: [string, Buffer][] = [
    ['truncated', good.subarray(0, good.length - 100)],
    ['tiny', good.subarray(0, 10)],
    ['flipped', Buffer.from(good.map((b, i) => (i === 200 ? b ^ 1 : b)))],
    ['magic', Buffer.concat([Buffer.from('GGUF'), good.subarray(4)])],
    [
      'version',
      (() => {
        const b = Buffer.from(good);
        b.writeUInt32LE(99, 4);
        return b;
      })(),
    ],
  ];
  for (const [name, bytes] of cases) {
    const p = join(dir, `${name}.kvc`);
    writeFileSync(p, bytes);
    assert.throws(
      () => KvCache.restore(p),
      (e: unknown) => e instanceof FileFormatError && /cache file/.test(e.message),
      name,
    );
  }
  assert.throws(() => KvCache.restore(join(dir, 'missing.kvc')), FileAccessError);
  // A well-formed file (valid checksum) whose header describes an impossible cache.
  const hlen = good.readUInt32LE(8);
  const header = JSON.parse(good.subarray(12, 12 + hlen).toString('utf8'));
  header.state[0].n = header.capacity + 1;
  const json = Buffer.from(JSON.stringify(header));
  const pre = Buffer.from(good.subarray(0, 12));
  pre.writeUInt32LE(json.length, 8);
  const body = Buffer.concat([pre, json, good.subarray(12 + hlen, good.length - 32)]);
  const forged = join(dir, 'forged.kvc');
  writeFileSync(forged, Buffer.concat([body, createHash('sha256').update(body).digest()]));
  assert.throws(() => KvCache.restore(forged), /holds 1025 positions, capacity is 1024/);
  // The cache that was saved is untouched by failed restores.
  assert.equal(cache.length, 64);
  cache.dispose();
});

test('trim then re-append equals never having appended', () => {
  const dir = tmp();
  for (const s of ['q4_0', 'q2k', 'kivi2', 'f16']) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      for (const cut of [1, 5, 20]) {
        const policy = schemePolicy(s, { window: 32, sinks: 4, windowMode });
        const ref = filled(policy, 150).cache;
        const { cache, k, v } = filled(policy, 150);
        assert.equal(cache.trim(cut), cut);
        assert.equal(cache.length, 150 - cut);
        for (let l = 0; l < 2; l++) cache.append(l, k[l]!.subarray((150 - cut) * H * D), v[l]!.subarray((150 - cut) * H * D));
        const a = join(dir, 'a.kvc');
        const b = join(dir, 'b.kvc');
        ref.save(a);
        cache.save(b);
        assert.ok(readFileSync(a).equals(readFileSync(b)), `${s} ${windowMode} cut ${cut}`);
        ref.dispose();
        cache.dispose();
      }
    }
  }
});

test('rewind into the prompt, clear, and regenerate', () => {
  const { cache, k, v } = filled(schemePolicy('q2k', { window: 8, sinks: 2 }), 100);
  cache.rewind(40);
  assert.equal(cache.length, 40);
  const view = cache.view(0);
  assert.equal(view.length, 40);
  const got = readStored(view, 'k');
  assert.equal(got[0], roundFp16(k[0]![0]!));
  cache.clear();
  assert.equal(cache.length, 0);
  cache.append(0, k[0]!.subarray(0, 33 * H * D), v[0]!.subarray(0, 33 * H * D));
  assert.equal(cache.layerLength(0), 33);
  cache.dispose();
});

test('nbytes() equals the accounting formula, region by region', () => {
  for (const s of [...schemes.keys()]) {
    for (const windowMode of ['overlay', 'residual'] as const) {
      for (const n of [1, 3, 31, 33, 100, 257]) {
        const policy = schemePolicy(s, { window: 16, sinks: 4, windowMode, anchors: { count: 5, layers: [1], precision: 'int4' } });
        const { cache } = filled(policy, Math.min(n, 60));
        cache.beginDecode();
        const extra = Math.max(0, n - 60);
        if (extra) for (let l = 0; l < 2; l++) cache.append(l, rows(3, extra), rows(4, extra));
        const got = cache.nbytes();
        const want = kvBytes({ ctx: n, layers: 2, kvHeads: H, headDim: D, policy, prompt: Math.min(n, 60) });
        for (const r of ['sinks', 'anchors', 'bulk', 'window', 'staging', 'total'] as const) assert.equal(got[r], want[r], `${s} ${windowMode} n=${n} ${r}`);
        cache.dispose();
      }
    }
  }
});

test('allocated bytes are what the chunks and exact regions hold', () => {
  const { cache } = filled(schemePolicy('q4_0', { window: 16, sinks: 4 }), 300);
  const b = cache.nbytes();
  const row = H * 18 * (D / 32); // q4_0 bytes per token per layer per tensor
  const chunks = Math.ceil(300 / 256) * 256 * row * 2; // K and V, two 256-token chunks
  const exact = (16 + 4) * H * D * 2 * 2;
  // One batch of 300: its queries before the last 16 read rows its appends pushed out of the ring (the spill).
  const spill = (300 - 16 - 4) * H * D * 2 * 2;
  assert.equal(b.transient, 2 * spill);
  assert.equal(b.allocated, 2 * (chunks + exact + spill));
  assert.ok(b.allocated >= b.total);
  cache.dispose();
});

test('decode anchors keep the first generated positions in the chosen precision on chosen layers', () => {
  const policy = schemePolicy('sign', { window: 0, sinks: 0, anchors: { count: 4, layers: [0], precision: 'f16' } });
  const { cache } = filled(policy, 40);
  cache.beginDecode();
  const gen = rows(11, 6);
  for (let l = 0; l < 2; l++) cache.append(l, gen, gen);
  const l0 = readStored(cache.view(0), 'k');
  const l1 = readStored(cache.view(1), 'k');
  for (let t = 0; t < 6; t++) {
    const x = gen.subarray(t * H * D, (t + 1) * H * D);
    const y0 = l0.subarray((40 + t) * H * D, (41 + t) * H * D);
    const y1 = l1.subarray((40 + t) * H * D, (41 + t) * H * D);
    if (t < 4) assert.deepEqual(y0, x.map(roundFp16), `anchor ${t} exact on layer 0`);
    else assert.notDeepEqual(y0, x.map(roundFp16));
    assert.notDeepEqual(y1, x.map(roundFp16), 'layer 1 has no anchors');
  }
  assert.ok(cache.view(0).segments.some((s) => s.region === 'anchors'));
  assert.ok(!cache.view(1).segments.some((s) => s.region === 'anchors'));
  cache.dispose();
});

test('rotation: an exact cache attends the same with and without it', () => {
  const base: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32', window: 8, sinks: 2 };
  const a = filled(base, 77).cache;
  const b = filled({ ...base, rotation: { k: true, v: true, seed: 3 } }, 77).cache;
  assert.notDeepEqual(readStored(b.view(0), 'k'), readStored(a.view(0), 'k'), 'rotation changed what is stored');
  assert.ok(maxRel(attendOut(b, 0, q), attendOut(a, 0, q)) < 1e-5);
  a.dispose();
  b.dispose();
});

test('rotation lowers 2-bit attention error on outlier channels', () => {
  // K with a few huge channels: rotation spreads them, per-token scales stop being dominated by them.
  const rng = new Prng(5);
  const T = 256;
  const k = rng.normals(T * H * D);
  for (let t = 0; t < T; t++) for (const c of [3, 17]) k[t * H * D + c]! *= 30;
  const v = rng.normals(T * H * D);
  const err = (rotation: boolean) => {
    const c = new KvCache({
      layers: 1,
      kvHeads: H,
      headDim: D,
      capacity: T,
      policy: { k: 'q4_0', v: 'q4_0', window: 0, sinks: 0, rotation: rotation ? { k: true, seed: 1 } : undefined },
    });
    c.append(0, k, v);
    const e = maxRel(attendOut(c, 0, q), attendNaive(q, k, v, HEADS, H, D));
    c.dispose();
    return e;
  };
  assert.ok(err(true) < err(false), `rotated ${err(true)} vs plain ${err(false)}`);
});

test('fork shares frozen bulk chunks and diverges without touching the original', () => {
  const { cache, k, v } = filled(schemePolicy('q4_0', { window: 8, sinks: 2 }), 600);
  const before = attendOut(cache, 0, q);
  const f = cache.fork();
  assert.equal(f.length, 600);
  assert.equal(f.layerCache(0).bulk.k.stream.chunks[0], cache.layerCache(0).bulk.k.stream.chunks[0], 'chunk shared, not copied');
  assert.deepEqual(attendOut(f, 0, q), before);
  f.trim(100);
  for (let l = 0; l < 2; l++) f.append(l, v[l]!.subarray(0, 50 * H * D), k[l]!.subarray(0, 50 * H * D));
  assert.deepEqual(attendOut(cache, 0, q), before, 'original unchanged');
  assert.notDeepEqual(attendOut(f, 0, q), before);
  f.dispose();
  assert.deepEqual(attendOut(cache, 0, q), before, 'disposing the fork keeps shared chunks alive');
  cache.dispose();
});

test('bad input: NaN/Inf, wrong lengths, capacity and layer errors leave the cache unchanged', () => {
  const { cache } = filled(schemePolicy('q4_0', { window: 4 }), 10, { capacity: 12 });
  const bad = rows(1, 1);
  bad[5] = NaN;
  assert.throws(() => cache.append(0, bad, rows(2, 1)), NonFiniteError);
  assert.throws(() => cache.append(0, rows(1, 1).subarray(1), rows(2, 1).subarray(1)), /multiples/);
  assert.throws(() => cache.append(0, rows(1, 3), rows(2, 3)), /capacity/);
  assert.throws(() => cache.append(5, rows(1, 1), rows(2, 1)), ArgumentError);
  assert.equal(cache.layerLength(0), 10);
  cache.dispose();
});

test('impossible policies fail at construction naming the field', () => {
  const mk =
    (policy: CachePolicy, capacity = 100) =>
    () =>
      new KvCache({ layers: 2, kvHeads: H, headDim: D, capacity, policy: { window: 8, ...policy } });
  const cases: [CachePolicy, RegExp, number?][] = [
    [{ k: 'q9_9', v: 'q4_0' }, /policy\.k: .*q9_9/],
    [{ k: 'q4_0', v: 'q4_0', window: 500 }, /policy\.window/],
    [{ k: 'q2c_0', v: 'q4_0', window: 0, sinks: 0 }, /policy\.k: per-channel group of 32/, 16],
    [{ k: 'q4_0', v: 'q4_0', layers: { 7: { k: 'f16' } } }, /policy\.layers\.7/],
    [{ k: 'q4_0', v: 'q4_0', layers: { 1: { v: 'nope' } } }, /policy\.layers\.1\.v/],
    [{ k: 'q4_0', v: 'q4_0', sinks: -1 }, /policy\.sinks/],
    [{ k: 'q4_0', v: 'q4_0', anchors: { count: 4, precision: 'int3' as never } }, /policy\.anchors\.precision/],
    [{ k: 'q4_0', v: 'q4_0', windowMode: 'ring' as never }, /policy\.windowMode/],
  ];
  for (const [p, re, cap] of cases) assert.throws(mk(p, cap), (e: unknown) => e instanceof PolicyError && re.test(e.message), re.source);
});

test('per-layer overrides change only their layer', () => {
  const { cache } = filled({ k: 'q4_0', v: 'q4_0', window: 0, sinks: 0, layers: { 1: { k: 'f32', v: 'f32' } } }, 40);
  assert.equal(cache.plans[0]!.k.id, 'q4_0');
  assert.equal(cache.plans[1]!.k.id, 'f32');
  cache.dispose();
});

test('reference attention agrees with naive float64 attention on an f32 cache view (GQA 1, 4, 8)', () => {
  for (const heads of [2, 8, 16]) {
    const { cache, k, v } = filled({ k: 'f32', v: 'f32', exact: 'f32', window: 0, sinks: 0 }, 45);
    const qq = new Prng(heads).normals(heads * D);
    const out = new Float32Array(qq.length);
    attendReference({ view: cache.view(0), q: qq, heads, out });
    assert.ok(maxRel(out, attendNaive(qq, k[0]!, v[0]!, heads, H, D)) < 1e-6);
    cache.dispose();
  }
});

test('int8 q (llama.cpp-style integer dots) is an explicit option with a small, nonzero error', () => {
  const { cache } = filled(schemePolicy('q4_0', { window: 0, sinks: 0 }), 300);
  const exact = attendOut(cache, 0, q);
  const out = new Float32Array(q.length);
  cache.attend(0, q, out, { qPrecision: 'int8' });
  const err = maxRel(out, exact);
  assert.ok(err > 0 && err < 2e-2, `int8 q error ${err}`);
  cache.dispose();
});

test('a cache-level attention precision is the default of every call; a call may still override it', () => {
  const policy = schemePolicy('q4_0', { window: 0, sinks: 0 });
  const exact = filled(policy, 300);
  const fast = filled(policy, 300, { attention: { q: 'int8', v: 'int16' } });
  const want = attendOut(exact.cache, 0, q);
  const got = attendOut(fast.cache, 0, q);
  const explicit = new Float32Array(q.length);
  exact.cache.attend(0, q, explicit, { qPrecision: 'int8', vPrecision: 'int16' });
  assert.deepEqual(got, explicit, 'the cache default equals naming the precisions per call');
  // Negative control: the option reached the kernels (int8 q moves the result a little).
  const err = maxRel(got, want);
  assert.ok(err > 0 && err < 2e-2, `int8 q + int16 weights error ${err}`);
  const back = new Float32Array(q.length);
  fast.cache.attend(0, q, back, { qPrecision: 'f32', vPrecision: 'f32' });
  assert.deepEqual(back, want, 'per-call f32 overrides the cache default');
  exact.cache.dispose();
  fast.cache.dispose();
});
