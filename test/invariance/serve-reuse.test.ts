// Invariance of one request's answer to where its KV came from: a cold request, its repeat on the same slot,
// prefix hits from another slot at several depths, a restored slot file, a second instance fed from a real
// redis-server, and 8 concurrent mixed requests give the tokens and logprobs of a cold prefill, bit for bit,
// for every scheme on every suite model. Negative control: resuming at the whole match without the exact
// rows there (a test-only rule) must fail the same checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { post, serve, tmp, type TestServer } from '../server/harness.js';
import { RedisServer, reportSkip } from '../redis/harness.js';
import type { CachePolicy } from '../../src/cache/policy.js';
import { wholeMatchUnsafe } from '../../src/server/resume-point.js';
import type { ServeOptions } from '../../src/server/server.js';
import type { RedisChunkStore } from '../../src/store/redis-store.js';
import { answer, ids, same, SCHEMES, suiteModels, type Answer } from './harness.js';

const models = suiteModels('test/invariance/serve-reuse.test.ts');
const redisSkip = reportSkip('test/invariance/serve-reuse.test.ts');
const dir = join(tmp, 'invariance-slots');
mkdirSync(dir, { recursive: true });
const C = 32;
const P = ids(150, 1);

/** Every way of serving a request the suite checks, against cold answers from `ref`; the mismatches found. */
async function reuseMismatches(s: TestServer, ref: TestServer, tag: string): Promise<string[]> {
  const bad: string[] = [];
  const coldOf = new Map<string, Answer>();
  const cold = async (p: number[], max = 6) => {
    const k = `${max}:${p.join(',')}`;
    if (!coldOf.has(k)) coldOf.set(k, await answer(ref, p, {}, max));
    return coldOf.get(k)!;
  };
  const check = async (what: string, p: number[], a: Answer, cachedWant?: number, max = 6) => {
    if (JSON.stringify(same(a)) !== JSON.stringify(same(await cold(p, max)))) bad.push(`${tag}: ${what} differs from a cold prefill`);
    if (cachedWant !== undefined && a.cached !== cachedWant) bad.push(`${tag}: ${what} resumed at ${a.cached}, expected ${cachedWant}`);
  };
  await check('cold', P, await answer(s, P, { id_slot: 0 }), 0);
  // The prompt-end snapshot: a repeat resumes one token before the end (its logits are recomputed).
  await check('repeat on the same slot', P, await answer(s, P, { id_slot: 0 }), P.length - 1);
  await check('repeat on another slot', P, await answer(s, P, { id_slot: 1 }), P.length - 1);
  // Over an exact bulk (f16) there are no exact regions: every position of an entry is a resume point.
  const exactBulk = s.server.ctx.engine!.scheduler.slots[0]!.cache.plans.every((l) => l.window === 0 && l.sinks === 0);
  for (const d of [40, 75, 110]) {
    // The first diverging prompt is computed cold and stops at the chunk boundary below d; the next resumes there.
    const q1 = [...P.slice(0, d), ...ids(30, d)];
    const q2 = [...P.slice(0, d), ...ids(25, d + 1)];
    await check(`diverging at ${d}`, q1, await answer(s, q1, { id_slot: 0 }));
    await check(`prefix hit at depth ${d}`, q2, await answer(s, q2, { id_slot: 1 }), exactBulk ? d : Math.floor(d / C) * C);
  }
  // A conversation continued after a slot file round trip: the slot resumes at its own end.
  await answer(s, P, { id_slot: 0 });
  const saved = await post(`${s.url}/slots/0?action=save`, { filename: `${tag.replace(/\W/g, '_')}.kvc` });
  if (saved.status !== 200) bad.push(`${tag}: save ${saved.status}`);
  const restored = await post(`${s.url}/slots/1?action=restore`, { filename: `${tag.replace(/\W/g, '_')}.kvc` });
  if (restored.status !== 200) bad.push(`${tag}: restore ${restored.status}`);
  const held = (JSON.parse(readFileSync(join(dir, `${tag.replace(/\W/g, '_')}.kvc.json`), 'utf8')) as { tokens: number[] }).tokens;
  const next = [...held, ...ids(12, 5)];
  const anchors = !!s.server.ctx.engine!.policy.anchors;
  // With decode anchors a continuation may not read past the previous prompt: the prompt-end snapshot serves it.
  await check('continuation after a restored slot file', next, await answer(s, next, { id_slot: 1 }), anchors ? P.length : held.length);
  // 8 concurrent mixed requests (prefills interleaved with batched decode steps) against the same one by one.
  const mixed = [P, ids(90, 7), [...P.slice(0, 60), ...ids(40, 8)], ids(33, 9), [...P, ...ids(20, 10)], ids(120, 11), P.slice(0, 100), ids(70, 12)];
  const got = await Promise.all(mixed.map((p, i) => answer(s, p, {}, 3 + (i % 4))));
  for (const [i, p] of mixed.entries()) await check(`concurrent request ${i}`, p, got[i]!, undefined, 3 + (i % 4));
  return bad;
}

async function pair(modelPath: string, policy: CachePolicy, o: Partial<ServeOptions> = {}): Promise<[TestServer, TestServer]> {
  const s = await serve({ modelPath, policy, parallel: 4, prefillChunk: 32, slotSavePath: dir, ...o });
  const ref = await serve({ modelPath, policy, parallel: 1, prefillChunk: 64, cacheRamBytes: 0 });
  return [s, ref];
}

for (const m of models) {
  test(`${m.name}: repeats, prefix hits at several depths, a restored slot file and concurrent requests answer as cold prefills, ${m.schemes.map((x) => x.name).join(', ')}`, async () => {
    const bad: string[] = [];
    for (const { name, policy } of m.schemes) {
      const [s, ref] = await pair(m.path, policy);
      try {
        bad.push(...(await reuseMismatches(s, ref, `${m.name} ${name}`)));
      } finally {
        await s.close();
        await ref.close();
      }
    }
    assert.deepEqual(bad, []);
  });
}

test('negative control: resuming at the whole match without the exact rows there fails the suite (lossy schemes)', async () => {
  for (const name of ['q4_0', 'q2k']) {
    const [s, ref] = await pair(models[0]!.path, SCHEMES.find((x) => x.name === name)!.policy, { resumeRule: wholeMatchUnsafe });
    try {
      const bad = await reuseMismatches(s, ref, `unsafe ${name}`);
      console.log(`negative control ${name}: ${bad.length} mismatches, e.g. ${bad.slice(0, 2).join('; ')}`);
      assert.ok(
        bad.some((b) => b.includes('differs from a cold prefill')),
        `${name}: the unsafe rule went unnoticed`,
      );
    } finally {
      await s.close();
      await ref.close();
    }
  }
});

test('a second instance fed from a real redis-server answers as a cold prefill, every scheme', { skip: redisSkip }, async () => {
  const r = await RedisServer.start();
  try {
    for (const m of models) {
      for (const { name, policy } of m.schemes) {
        const o = { modelPath: m.path, policy, parallel: 1, kvStore: r.url, kvStoreKey: 'invariance-suite-store-key', storeLog: () => {} };
        const [a, b] = [await serve({ ...o, prefillChunk: 7 }), await serve({ ...o, prefillChunk: 128 })];
        const ref = await serve({ modelPath: m.path, policy, parallel: 1, cacheRamBytes: 0 });
        try {
          for (const x of [a, b]) assert.ok(await (x.server.store as RedisChunkStore).waitReady(5000));
          const p = [...ids(140, 3), ...ids(10, m.name.length)];
          await answer(a, p);
          await a.server.store!.flush();
          const got = await answer(b, p);
          // A stored its chunks and resume rows at the deepest chunk boundary before its prompt end.
          assert.equal(got.cached, Math.floor((p.length - 1) / C) * C, `${m.name} ${name}`);
          assert.deepEqual(same(got), same(await answer(ref, p)), `${m.name} ${name}`);
        } finally {
          for (const x of [a, b, ref]) await x.close();
        }
      }
    }
  } finally {
    await r.stop();
  }
});
