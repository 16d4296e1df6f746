// Two `kvpack serve` instances sharing prefix chunks through a real redis-server, driven with the official
// openai client: B serves a prompt A prefilled from the chunks and resume rows A stored, with exactly the
// tokens (and logprobs) of a cold prefill, and a prompt sharing a prefix once one instance left resume rows
// where prompts diverged; nothing crosses models, policies or salts; Redis killed,
// restarted, evicting or holding a corrupted value never fails a request or changes its tokens.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import { RedisCluster, RedisServer, reportSkip } from './harness.js';
import { TEST_STORE_KEY } from './fixtures.js';
import { chatModelPath, metric, serve, tmp, type TestServer } from '../server/harness.js';
import { fromRoot } from '../paths.js';
import { writeChatModel } from '../fixtures/chat-model.js';
import { chunkHashes } from '../../src/server/prefix-key.js';
import type { RedisChunkStore } from '../../src/store/redis-store.js';
import { decodeStoreValue, STORE_FORMAT_VERSION } from '../../src/store/value.js';
import type { ServeOptions } from '../../src/server/server.js';

const skip = reportSkip('test/redis/serve.test.ts');
// The server harness's defaults: chunks of 32, prefill batches of 64, exact window 16. A prompt of n tokens
// leaves its chunks and resume rows at the deepest chunk boundary below n (and where it diverged from what
// the store held).
const C = 32;

/** Token ids (prompts as ids: lengths and chunk boundaries are exact). */
const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 10 + ((i * 37 + seed * 101 + ((i * i) % 17)) % 240));

type Instance = TestServer & { lines: string[] };

async function instance(url: string | null, o: Partial<ServeOptions> = {}): Promise<Instance> {
  const lines: string[] = [];
  const s = await serve({ ...(url ? { kvStore: url, kvStoreKey: TEST_STORE_KEY } : {}), storeLog: (l) => lines.push(l), ...o });
  return { ...s, lines };
}

async function complete(s: TestServer, prompt: number[], extra: Record<string, unknown> = {}): Promise<OpenAI.Completion> {
  return s.client.completions.create({
    model: 'x',
    prompt,
    max_tokens: 8,
    temperature: 0,
    logprobs: 2,
    ignore_eos: true,
    ...extra,
  } as OpenAI.CompletionCreateParamsNonStreaming);
}

const cached = (r: OpenAI.Completion) => r.usage!.prompt_tokens_details?.cached_tokens ?? 0;
/** The generated text and each token's logprob: equal only when the computation was. */
const output = (r: OpenAI.Completion) => ({ text: r.choices[0]!.text, logprobs: r.choices[0]!.logprobs!.token_logprobs });
const store = (s: TestServer) => s.server.store as RedisChunkStore;

/** Runs fn with a fresh redis-server; every instance it opens is closed and the server stopped afterwards. */
async function withServers(
  fn: (r: RedisServer, open: (url: string | null, o?: Partial<ServeOptions>) => Promise<Instance>) => Promise<void>,
  args: string[] = [],
): Promise<void> {
  const r = await RedisServer.start(args);
  const opened: Instance[] = [];
  try {
    await fn(r, async (url, o) => {
      const s = await instance(url, o);
      opened.push(s);
      if (url) assert.ok(await store(s).waitReady(5000), 'connected');
      return s;
    });
  } finally {
    for (const s of opened) await s.close();
    await r.stop();
  }
}

test(
  "two instances, one Redis: B serves A's prompt and, once resume rows exist where prompts diverge, a shared prefix, with the tokens of a cold prefill",
  { skip },
  () =>
    withServers(async (r, open) => {
      const [a, b, c, cold] = [await open(r.url), await open(r.url), await open(r.url), await open(null)];
      const shared = ids(300, 1);
      const pa = [...shared, ...ids(40, 2)];
      assert.equal(cached(await complete(a, pa)), 0);
      await store(a).flush();
      // A's chunks below 320 and its resume rows at 320, written behind its response.
      assert.equal(await metric(a.url, 'kvpack:remote_store_written_chunks_total'), 11);
      assert.equal(await r.admin().dbsize(), 11);
      const before = await metric(b.url, 'llamacpp:prompt_tokens_total');
      const rb = await complete(b, pa);
      const evaluated = (await metric(b.url, 'llamacpp:prompt_tokens_total')) - before;
      assert.equal(cached(rb), 320);
      assert.equal(evaluated, pa.length - 320);
      assert.equal(await metric(b.url, 'kvpack:prefix_cache_remote_hits_tokens_total'), 320);
      assert.ok((await metric(b.url, 'kvpack:remote_store_read_bytes_total')) > 0);
      assert.ok((await metric(b.url, 'kvpack:remote_store_latency_seconds_count', 'op="get"')) > 0);
      assert.equal(await metric(b.url, 'kvpack:remote_store_errors_total'), 0);
      assert.deepEqual(output(rb), output(await complete(cold, pa)));
      // A prompt sharing 300 tokens: the chain's 9 chunks match but have no resume rows at 288, so B computes
      // it cold and stores resume rows there; C then resumes at 288.
      const pb = [...shared, ...ids(30, 3)];
      const rb2 = await complete(b, pb);
      assert.equal(cached(rb2), 0);
      await store(b).flush();
      const pc = [...shared, ...ids(25, 4)];
      const rc = await complete(c, pc);
      assert.equal(cached(rc), 288);
      assert.deepEqual(output(rb2), output(await complete(cold, pb)));
      assert.deepEqual(output(rc), output(await complete(cold, pc)));
      // Streaming from C again (now a local hit on the fetched entry) still finishes normally.
      const chunks: string[] = [];
      const again = { model: 'x', prompt: pc, max_tokens: 8, temperature: 0, ignore_eos: true, stream: true } as OpenAI.CompletionCreateParamsStreaming;
      for await (const ch of await c.client.completions.create(again)) chunks.push(ch.choices[0]?.text ?? '');
      assert.ok(chunks.length >= 8);
    }),
);

test("isolation: another model file, cache policy or salt finds nothing of A's in the store; another -ub does", { skip }, () =>
  withServers(async (r, open) => {
    const a = await open(r.url);
    const p = [...ids(300, 4), ...ids(20, 5)];
    await complete(a, p);
    await complete(a, [...ids(300, 6), ...ids(20, 5)], { cache_salt: 'alice' });
    await store(a).flush();
    const other = writeChatModel(tmp, 'tiny-chat-store-other', { seed: 99 });
    for (const o of [{ modelPath: other }, { policy: { k: 'f16', v: 'f16', window: 16, sinks: 4 } }] as Partial<ServeOptions>[]) {
      const b = await open(r.url, o);
      assert.equal(cached(await complete(b, p)), 0, JSON.stringify(o));
      assert.equal(await metric(b.url, 'kvpack:remote_store_hit_tokens_total'), 0);
    }
    const b = await open(r.url);
    assert.equal(cached(await complete(b, p, { cache_salt: 'bob' })), 0, 'another salt');
    assert.equal(cached(await complete(b, [...ids(300, 6), ...ids(20, 7)])), 0, 'a salted prefix without the salt');
    // Positive controls: the same settings (any -ub: results do not depend on it) find the public prefix,
    // and the salted one under its salt (A's resume rows at 288, below the shared 300 tokens).
    assert.equal(cached(await complete(await open(r.url, { prefillChunk: 7 }), p)), 288);
    assert.ok(cached(await complete(b, p)) >= 256);
    assert.ok(cached(await complete(b, [...ids(300, 6), ...ids(20, 8)], { cache_salt: 'alice' })) >= 256);
  }),
);

test('Redis killed mid-stream: the stream finishes and requests are served without it; restarted, hits resume by themselves', { skip }, () =>
  withServers(async (r, open) => {
    const [a, b] = [await open(r.url), await open(r.url)];
    const p = [...ids(200, 6), ...ids(20, 7)];
    const body = { model: 'x', prompt: p, max_tokens: 100, temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true } };
    const stream = await a.client.completions.create(body as OpenAI.CompletionCreateParamsStreaming);
    let n = 0;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const ch of stream) {
      if (++n === 3) await r.kill();
      usage = ch.usage ?? usage;
    }
    assert.equal(usage?.completion_tokens, 100, 'every token arrived');
    // Down: B looks up, misses, computes everything; no error reaches the client.
    const down = await complete(b, [...ids(200, 6), ...ids(30, 8)]);
    assert.equal(cached(down), 0);
    assert.ok((await metric(b.url, 'kvpack:remote_store_errors_total')) > 0);
    await complete(a, [...ids(260, 9), ...ids(20, 8)]);
    assert.match(a.lines.join('\n'), /unavailable .*serving without it/);
    await r.restart();
    assert.ok(await store(a).waitReady(5000), 'A reconnected by itself');
    assert.ok(await store(b).waitReady(5000), 'B reconnected by itself');
    assert.match(a.lines.join('\n'), /reconnected/);
    // The restarted Redis is empty: a new prefill fills it and B finds it again.
    const q = ids(260, 10);
    await complete(a, [...q, ...ids(20, 11)]);
    await store(a).flush();
    assert.ok(cached(await complete(b, [...q, ...ids(30, 12)])) >= 192);
  }),
);

test('Redis evicting past maxmemory: partial hits and misses, no errors, the tokens of a cold prefill', { skip }, () =>
  withServers(async (r, open) => {
    // Resume rows every 2 chunks: a chain cut short by eviction still resumes at a boundary below the cut.
    const [a, b, cold] = [await open(r.url, { resumeEvery: 2 }), await open(r.url, { resumeEvery: 2 }), await open(null)];
    const admin = r.admin();
    const usedNow = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    const used = await usedNow();
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    // Redis's LRU samples keys: with few, large values the default 5 samples could evict the newest prefix too.
    await admin.config('SET', 'maxmemory-samples', '64');
    const prefixes = Array.from({ length: 12 }, (_, i) => ids(300, 20 + i));
    const write = async (pres: number[][]) => {
      for (const pre of pres) {
        await complete(a, [...pre, ...ids(40, 2)]);
        await store(a).flush();
      }
    };
    // Six older prefixes, then six newer ones more than a second later: Redis's LRU clock counts whole
    // seconds, so keys written within one are equally old and eviction breaks the newest chains as often as
    // the oldest (a full-suite run hit none). Then room for the newer ones and about half of the older ones:
    // the next write command evicts down to it.
    await write(prefixes.slice(0, 6));
    const afterOld = await usedNow();
    await new Promise((res) => setTimeout(res, 1100));
    await write(prefixes.slice(6));
    const afterNew = await usedNow();
    await admin.config('SET', 'maxmemory', String(afterNew - Math.floor((afterOld - used) / 2)));
    await admin.set('kvpack-test-evict-now', 'x');
    await admin.del('kvpack-test-evict-now');
    assert.ok(Number(/evicted_keys:(\d+)/.exec(await admin.info('stats'))![1]) > 0, 'Redis evicted (else this test proves nothing)');
    const full = 320;
    const got: number[] = [];
    // Newest first: B's own write-behind evicts the oldest keys as it goes. B asks A's prompts: resume rows at 320.
    for (const pre of [...prefixes].reverse()) {
      const p = [...pre, ...ids(40, 2)];
      const rb = await complete(b, p);
      got.push(cached(rb));
      assert.deepEqual(output(rb), output(await complete(cold, p)));
    }
    console.log(`maxmemory: cached tokens per prefix, newest first: ${got.join(' ')} (of ${full})`);
    assert.ok(
      got.some((x) => x > 0),
      `some prefixes still hit: ${got}`,
    );
    assert.ok(
      got.some((x) => x < full),
      `some were (partly) evicted: ${got}`,
    );
    for (const s of [a, b]) assert.equal(await metric(s.url, 'kvpack:remote_store_errors_total'), 0);
  }),
);

test('a flipped byte in a stored chunk: the chain ends there (logged, deleted), the request is computed, not garbage', { skip }, () =>
  withServers(async (r, open) => {
    const [a, b, cold] = [await open(r.url), await open(r.url), await open(null)];
    const shared = ids(300, 13);
    const pa = [...shared, ...ids(40, 2)];
    await complete(a, pa);
    await store(a).flush();
    const hashes = chunkHashes(a.server.ctx.engine!.keyFor(), pa, C, 10);
    const key = store(a).fullKey(hashes[4]!);
    const admin = r.admin();
    const sound = (await admin.getBuffer(key))!;
    const value = Buffer.from(sound);
    value[value.length >> 1] ^= 0x10;
    await admin.set(key, value);
    const pb = pa;
    const rb = await complete(b, pb);
    // Chunks 0..3 are sound but hold no resume rows at 128: computed cold.
    assert.equal(cached(rb), 0);
    assert.deepEqual(output(rb), output(await complete(cold, pb)));
    assert.equal(await metric(b.url, 'kvpack:remote_store_corrupt_total'), 1);
    // Deleted, then written again by B's own prefill: byte for byte what A had written.
    await store(b).flush();
    assert.deepEqual(await admin.getBuffer(key), sound);
    assert.match(b.lines.join('\n'), /refused .*MAC mismatch.*deleted/);
  }),
);

test('redis-cluster://: two instances share a prefix through a 3-node cluster', { skip }, async () => {
  const cluster = await RedisCluster.start(3);
  const opened: Instance[] = [];
  try {
    for (let i = 0; i < 2; i++) opened.push(await instance(cluster.url));
    const [a, b] = opened as [Instance, Instance];
    for (const s of opened) assert.ok(await store(s).waitReady(10000));
    const shared = ids(300, 14);
    await complete(a, [...shared, ...ids(40, 2)]);
    await store(a).flush();
    const perNode = await Promise.all(cluster.nodes.map((n) => n.admin().dbsize()));
    assert.equal(
      perNode.reduce((x, y) => x + y, 0),
      11,
      `keys per node ${perNode}`,
    );
    assert.equal(cached(await complete(b, [...shared, ...ids(40, 2)])), 320);
  } finally {
    for (const s of opened) await s.close();
    await cluster.stop();
  }
});

test('kvpack serve --kv-store as users run it: password from KVPACK_REDIS_PASSWORD, chunks written with their TTL, SIGTERM exits 0', { skip }, async () => {
  const r = await RedisServer.start();
  try {
    const admin = r.admin();
    await admin.config('SET', 'requirepass', 'sekrit');
    const args = [
      'serve',
      '-m',
      chatModelPath(),
      '--port',
      '0',
      '-c',
      '512',
      '--kv',
      'q8_0',
      '--kv-window',
      '16',
      '--sinks',
      '4',
      '--chunk-tokens',
      '32',
      '-ub',
      '64',
      '-np',
      '1',
      '--kv-store',
      r.url,
      '--kv-store-ttl',
      '600',
    ];
    const child = spawn(process.execPath, [fromRoot('bin', 'kvpack.js'), ...args], {
      env: { ...process.env, KVPACK_REDIS_PASSWORD: 'sekrit', KVPACK_STORE_KEY: TEST_STORE_KEY },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (b: Buffer) => {
        err += b.toString();
        const m = /kvpack serve: (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    assert.match(err, new RegExp(`remote store ${r.url}`));
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    // The client connects in the background: a request made before it is ready is served, its chunks dropped.
    for (let i = 0; i < 20 && (await admin.dbsize()) < 11; i++) {
      await client.completions.create({ model: 'x', prompt: [...ids(300, 1), ...ids(40, 2)], max_tokens: 2, temperature: 0 });
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(await admin.dbsize(), 11, err);
    const ttl = await admin.ttl((await admin.keys(`kvpack:v${STORE_FORMAT_VERSION}:*`))[0]!);
    assert.ok(ttl > 590 && ttl <= 600, `ttl ${ttl}`);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, err);
    assert.doesNotMatch(err, /unavailable|NOAUTH|WARNING/);
  } finally {
    await r.stop();
  }
});

test('kvpack serve --kv-store without a key refuses to start (one line); --kv-store-unauthenticated starts with a loud warning', { skip }, async () => {
  const r = await RedisServer.start();
  try {
    const env = { ...process.env };
    delete env['KVPACK_STORE_KEY'];
    const base = ['serve', '-m', chatModelPath(), '--port', '0', '-c', '256', '--kv-store', r.url];
    const refused = spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), ...base], { encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(refused.status, 2, refused.stderr);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(refused.stderr, /needs a key .*--kv-store-key.*KVPACK_STORE_KEY.*--kv-store-unauthenticated/);
    const short = spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), ...base, '--kv-store-key', 'short'], { encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(short.status, 2, short.stderr);
    assert.match(short.stderr, /at least 16 bytes/);
    const child = spawn(process.execPath, [fromRoot('bin', 'kvpack.js'), ...base, '--kv-store-unauthenticated'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (b: Buffer) => {
        err += b.toString();
        // The address line comes once the model is loaded and SIGTERM drains (before, it would just kill).
        if (/WARNING/.test(err) && /kvpack serve: http/.test(err)) resolve();
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    assert.match(err, /WARNING: --kv-store-unauthenticated: .*NOT signed/);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, err);
  } finally {
    await r.stop();
  }
});

/** Rewrites a stored value's payload as an attacker without the key would: same header, bytes changed, the unkeyed sha256 recomputed. */
function forge(value: Buffer): Buffer {
  const body = Buffer.from(value.subarray(0, value.length - 32));
  for (let i = body.length - 200; i < body.length; i++) body[i] = (body[i]! * 7 + 13) & 255;
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

test('a forged chunk (payload rewritten, unkeyed hash recomputed): a miss, counted, deleted; the output of a cold prefill', { skip }, () =>
  withServers(async (r, open) => {
    // Resume rows at every boundary, so the chain is usable up to wherever it breaks.
    const [a, b, cold] = [await open(r.url, { resumeEvery: 1 }), await open(r.url, { resumeEvery: 1 }), await open(null)];
    const shared = ids(300, 17);
    const pa = [...shared, ...ids(40, 2)];
    await complete(a, pa);
    await store(a).flush();
    const hashes = chunkHashes(a.server.ctx.engine!.keyFor(), pa, C, 10);
    const key = store(a).fullKey(hashes[4]!);
    const admin = r.admin();
    await admin.set(key, forge((await admin.getBuffer(key))!));
    const pb = [...shared, ...ids(30, 3)];
    const rb = await complete(b, pb);
    assert.equal(cached(rb), 128, 'the chain ends at the forged chunk');
    assert.deepEqual(output(rb), output(await complete(cold, pb)));
    assert.equal(await metric(b.url, 'kvpack:remote_store_corrupt_total'), 1);
    assert.match(b.lines.join('\n'), /refused .*MAC mismatch.*deleted/);
    await store(b).flush();
    const rewritten = await admin.getBuffer(key);
    assert.ok(rewritten && decodeStoreValue(key, rewritten, Buffer.from(TEST_STORE_KEY)).ok, "written again by B's own prefill, signed");
  }),
);

test('negative control: unauthenticated instances take the same forgery (which is why it needs an explicit flag)', { skip }, () =>
  withServers(async (r, open) => {
    const plain = { kvStoreKey: undefined, kvStoreUnauthenticated: true, resumeEvery: 1 } as Partial<ServeOptions>;
    const [a, b] = [await open(r.url, plain), await open(r.url, plain)];
    const shared = ids(300, 17);
    const pa = [...shared, ...ids(40, 2)];
    await complete(a, pa);
    await store(a).flush();
    const key = store(a).fullKey(chunkHashes(a.server.ctx.engine!.keyFor(), pa, C, 10)[4]!);
    const admin = r.admin();
    await admin.set(key, forge((await admin.getBuffer(key))!));
    const rb = await complete(b, [...shared, ...ids(30, 3)]);
    assert.ok(cached(rb) > 128, `the forged chunk was used: cached ${cached(rb)}`);
    assert.equal(await metric(b.url, 'kvpack:remote_store_corrupt_total'), 0);
  }),
);

test('kvpack serve --kv-store with a bad address: one line naming it (password redacted), exit 2', () => {
  for (const [url, why] of [
    ['ftp://h:1', /unknown scheme/],
    ['redis://u:hunter2@h:99999', /port '99999'/],
    ['redis://h:1/x', /database 'x'/],
  ] as const) {
    const r = spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), 'serve', '-m', chatModelPath(), '--port', '0', '--kv-store', url], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, why);
    assert.doesNotMatch(r.stderr, /hunter2/);
  }
});
