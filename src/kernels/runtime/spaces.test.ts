// Memory spaces (spaces.ts): a model and caches split over several small wasm memories (forced by
// KVPACK_SPACE_MIB in a child process) give exactly the logits of one memory, with workers running there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeGguf } from '../../gguf/writer.js';
import { tinyLlama } from '../../../test/fixtures/tiny.js';
import { runWorkload, type WorkloadResult } from '../../../test/fixtures/spaces-workload.js';
import { wasmKernels } from './wasm.js';
import { placeIn, setSpaceCap, spaceOf, spaces } from './spaces.js';
import { ArgumentError, OutOfMemoryError } from '../../errors.js';
import { KvCache } from '../../cache/kvcache.js';
import { setForceReference } from '../attention/attend.js';
import { Prng } from '../../numeric/prng.js';
import { nmse } from '../../lab/metrics.js';

const workload = fileURLToPath(new URL('../../../test/fixtures/spaces-workload.js', import.meta.url));
/** Small enough that the model (~16 MB of q8_0 weights) and its 2048-position caches need several spaces. */
const SPACE_MIB = 16;

test('a model and caches over several 16 MiB memory spaces decode exactly as in one memory', {
  skip: wasmKernels() ? false : 'wasm kernels unavailable',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-spaces-model-'));
  try {
    const path = join(dir, 'm.gguf');
    writeGguf(path, tinyLlama({ dim: 512, layers: 4, heads: 4, kvHeads: 2, ff: 1536, vocab: 4096, ctx: 2048, weightType: 'q8_0', seed: 11 }));
    const one = runWorkload(path);
    const child = spawnSync(process.execPath, [workload, path], {
      encoding: 'utf8',
      env: { ...process.env, KVPACK_SPACE_MIB: String(SPACE_MIB), KVPACK_THREADS: '2' },
      maxBuffer: 1 << 28,
    });
    assert.equal(child.status, 0, child.stderr);
    const many = JSON.parse(child.stdout) as WorkloadResult;
    // The control: one memory here, and over there weights and cache layers really are spread out.
    assert.equal(one.spaces, 1);
    assert.deepEqual(one.weightSpaces, [0]);
    assert.ok(many.spaces >= 3, `${many.spaces} spaces`);
    assert.ok(
      many.weightSpaces.some((s) => s > 0),
      `weights in spaces ${many.weightSpaces}`,
    );
    assert.ok(many.cacheSpaces.some((s) => s > 0) && !many.cacheSpaces.includes(-1), `cache layers in spaces ${many.cacheSpaces}`);
    for (const name of Object.keys(one.logits)) {
      assert.equal(many.logits[name]!.length, one.logits[name]!.length);
      one.logits[name]!.forEach((step, i) => assert.deepEqual(many.logits[name]![i], step, `${name}: step ${i} differs`));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** 2 GiB and a bit: every address the model, its caches and the kernels' scratch get is then past 2^31. */
const FILL_MIB = 2100;

test('weights, caches and scratch above 2 GiB decode exactly as low in memory (addresses read unsigned)', {
  skip: wasmKernels() ? false : 'wasm kernels unavailable',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-spaces-high-'));
  try {
    const path = join(dir, 'm.gguf');
    writeGguf(path, tinyLlama({ dim: 256, layers: 2, heads: 4, kvHeads: 2, ff: 512, vocab: 512, ctx: 2048, weightType: 'q8_0', seed: 12 }));
    const low = runWorkload(path);
    const child = spawnSync(process.execPath, [workload, path, String(FILL_MIB)], {
      encoding: 'utf8',
      env: { ...process.env, KVPACK_THREADS: '2' },
      maxBuffer: 1 << 28,
    });
    assert.equal(child.status, 0, child.stderr);
    const high = JSON.parse(child.stdout) as WorkloadResult;
    // The control: there, the weights really start past 2^31 (here they do not), in the one memory.
    assert.ok(high.lowestWeight >= FILL_MIB * 2 ** 20 && high.lowestWeight > 2 ** 31, `lowest weight at ${high.lowestWeight}`);
    assert.ok(low.lowestWeight < 2 ** 31);
    assert.equal(high.spaces, 1);
    assert.ok(high.poolJobs > 0, 'attention ran no pooled unit job there');
    for (const name of Object.keys(low.logits)) {
      assert.equal(high.logits[name]!.length, low.logits[name]!.length);
      low.logits[name]!.forEach((step, i) => assert.deepEqual(high.logits[name]![i], step, `${name}: step ${i} differs`));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('placement: a tensor bigger than one space, a bad cap, and which space a view is in', { skip: wasmKernels() ? false : 'wasm kernels unavailable' }, () => {
  assert.throws(() => setSpaceCap(1000), ArgumentError);
  assert.throws(() => placeIn('t', 2 ** 33), OutOfMemoryError);
  const k = wasmKernels()!;
  const off = k.arena.alloc(64);
  assert.equal(spaceOf(new Uint8Array(k.arena.memory.buffer, off, 64)), k);
  assert.equal(spaceOf(new Uint8Array(64)), null);
  k.arena.free(off);
  assert.ok(spaces().length >= 1);
});

test('a cache with a layer bigger than a space is refused at creation with the sizes named', {
  skip: wasmKernels() ? false : 'wasm kernels unavailable',
}, () => {
  setSpaceCap(4 << 20);
  try {
    assert.throws(
      () => new KvCache({ layers: 2, kvHeads: 8, headDim: 128, capacity: 65536, policy: { k: 'f16', v: 'f16', window: 0, sinks: 0 } }),
      (e: Error) => e instanceof OutOfMemoryError && /KvCache layer 0/.test(e.message) && /more than one memory space/.test(e.message),
    );
  } finally {
    setSpaceCap(2 ** 32);
  }
});

test('one cache whose layers need a space each: placed apart, attended in their spaces as the reference does, saved and restored', {
  skip: wasmKernels() ? false : 'wasm kernels unavailable',
}, () => {
  // Each layer pledges ~9 MB at capacity (8 kv heads x 128 x 4096 positions, K and V in q8_0): two do not fit 16 MiB.
  setSpaceCap(16 << 20);
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-spaces-cache-'));
  const caches: KvCache[] = [];
  try {
    const make = () => new KvCache({ layers: 3, kvHeads: 8, headDim: 128, capacity: 4096, policy: { k: 'q8_0', v: 'q8_0', window: 16, sinks: 4 } });
    const cache = make();
    caches.push(cache);
    const rng = new Prng(21);
    const row = 8 * 128;
    for (let l = 0; l < 3; l++) cache.append(l, rng.normals(700 * row), rng.normals(700 * row));
    const layerSpaces = [0, 1, 2].map((l) => spaceOf(cache.state()[l]!.arrays.chunks.k[0]!)!.index);
    assert.equal(new Set(layerSpaces).size, 3, `layers in spaces ${layerSpaces}`);
    const q = rng.normals(32 * 128);
    const attendAll = (c: KvCache) =>
      [0, 1, 2].map((l) => {
        const out = new Float32Array(q.length);
        const r = c.attend(l, q, out);
        return { out, path: r.path };
      });
    const fast = attendAll(cache);
    setForceReference(true);
    const ref = attendAll(cache);
    setForceReference(false);
    fast.forEach((f, l) => {
      assert.equal(f.path, 'fast');
      assert.equal(ref[l]!.path, 'reference');
      assert.ok(nmse(f.out, ref[l]!.out) < 1e-9, `layer ${l}: nmse ${nmse(f.out, ref[l]!.out)}`);
      if (l > 0) assert.notDeepEqual(f.out, fast[0]!.out);
    });
    const file = join(dir, 'c.kvc');
    cache.save(file);
    const back = KvCache.restore(file);
    caches.push(back);
    attendAll(back).forEach((b, l) => assert.deepEqual(b.out, fast[l]!.out));
  } finally {
    for (const c of caches) c.dispose();
    setSpaceCap(2 ** 32);
    rmSync(dir, { recursive: true, force: true });
  }
});
