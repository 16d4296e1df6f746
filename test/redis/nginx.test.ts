// Several instances behind a real load balancer: nginx (its own temp prefix and config, loopback ports) in
// front of two `kvpack serve` processes sharing one redis-server. A long prompt through nginx to A, then
// the same through nginx pinned to B: B serves A's prefix from the store with the same logprobs; A killed
// mid-stream, the client's retry through nginx is served by B; /metrics of both scrapeable through nginx.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { freePort, RedisServer, reportSkip } from './harness.js';
import { TEST_STORE_KEY } from './fixtures.js';
import { chatModelPath, serveChild } from '../server/harness.js';

const NGINX = '/usr/sbin/nginx';
const redisSkip = reportSkip('test/redis/nginx.test.ts');
const skip = redisSkip ?? (existsSync(NGINX) ? undefined : `${NGINX} not found (apt-get install -y nginx)`);
if (skip && !redisSkip) console.log(`test/redis/nginx.test.ts: skipping: ${skip}`);

/** The upstream block README documents, plus a location per instance to pin a request to one. */
function nginxConf(dir: string, port: number, a: string, b: string): string {
  const hostPort = (u: string) => new URL(u).host;
  return `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream kvpack {
    server ${hostPort(a)} max_fails=1 fail_timeout=10s;
    server ${hostPort(b)} max_fails=1 fail_timeout=10s;
    keepalive 8;
  }
  upstream kvpack_a { server ${hostPort(a)}; }
  upstream kvpack_b { server ${hostPort(b)}; }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 8m;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
    proxy_read_timeout 600s;
    proxy_next_upstream error timeout http_502 http_503;
    location / { proxy_pass http://kvpack; }
    location /a/ { proxy_pass http://kvpack_a/; }
    location /b/ { proxy_pass http://kvpack_b/; }
  }
}
`;
}

async function startNginx(a: string, b: string): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-nginx-'));
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, port, a, b));
  const p: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (p.exitCode !== null) throw new Error(`nginx exited: ${err}${existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''}`);
    const ok = await fetch(`${url}/a/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 200) throw new Error(`nginx did not answer: ${err}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url,
    stop: async () => {
      p.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 10 + ((i * 37 + seed * 101 + ((i * i) % 17)) % 240));
const client = (base: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60_000 });
const body = (prompt: number[], extra: Record<string, unknown> = {}) => ({
  model: 'x',
  prompt,
  max_tokens: 8,
  temperature: 0,
  logprobs: 2,
  ignore_eos: true,
  ...extra,
});
const cached = (r: OpenAI.Completion) => r.usage!.prompt_tokens_details?.cached_tokens ?? 0;

async function metricOf(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^${name.replace(/:/g, '\\:')} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

test('nginx in front of two instances sharing Redis: prefix served from the store on B, failover after A dies, both scrapeable', { skip }, async () => {
  const redis = await RedisServer.start();
  const env = { ...process.env, KVPACK_STORE_KEY: TEST_STORE_KEY };
  const args = [
    '-m',
    chatModelPath(),
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
    '2',
    '--kv-store',
    redis.url,
  ];
  const a = await serveChild(args, env);
  const b = await serveChild(args, env);
  const lb = await startNginx(a.url, b.url);
  try {
    const prompt = [...ids(300, 1), ...ids(40, 2)];
    const viaA = await client(`${lb.url}/a`).completions.create(body(prompt) as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(cached(viaA), 0);
    // A writes its chunks behind the response: wait until they are in Redis.
    // Ten chunks of 32 below the prompt end, and the resume rows at the deepest boundary (320).
    for (let i = 0; i < 200 && (await redis.admin().dbsize()) < 11; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(await redis.admin().dbsize(), 11);
    const viaB = await client(`${lb.url}/b`).completions.create(body(prompt) as OpenAI.CompletionCreateParamsNonStreaming);
    assert.ok(cached(viaB) >= 256, `B served A's prefix from the store: cached ${cached(viaB)}`);
    assert.equal(viaB.choices[0]!.text, viaA.choices[0]!.text);
    assert.deepEqual(viaB.choices[0]!.logprobs!.token_logprobs, viaA.choices[0]!.logprobs!.token_logprobs);
    // Both instances' /metrics through nginx: B counted the remote hit, A the chunks it wrote.
    assert.ok((await metricOf(`${lb.url}/b`, 'kvpack:remote_store_hit_tokens_total')) >= 256);
    // Ten chunks and the resume rows at 320.
    assert.equal(await metricOf(`${lb.url}/a`, 'kvpack:remote_store_written_chunks_total'), 11);

    // A stream on A; A is killed after three chunks; the client retries through the balanced upstream.
    const predictedB = await metricOf(b.url, 'llamacpp:tokens_predicted_total');
    const stream = await client(`${lb.url}/a`).completions.create(
      body(prompt, { max_tokens: 400, stream: true, logprobs: null }) as unknown as OpenAI.CompletionCreateParamsStreaming,
    );
    let chunks = 0;
    let broke = false;
    try {
      for await (const _ of stream) if (++chunks === 3) a.child.kill('SIGKILL');
    } catch {
      broke = true;
    }
    assert.ok(broke || chunks < 400, `the stream broke when A died (${chunks} chunks)`);
    // Every retry lands on B: nginx marks A failed at its first refused connection and passes the request on.
    for (let i = 0; i < 3; i++) {
      const retry = await client(lb.url).completions.create(body(prompt) as OpenAI.CompletionCreateParamsNonStreaming);
      assert.equal(retry.choices[0]!.text, viaA.choices[0]!.text);
    }
    assert.equal((await metricOf(b.url, 'llamacpp:tokens_predicted_total')) - predictedB, 3 * 8, 'B served the retries');
    assert.equal((await fetch(`${lb.url}/b/metrics`)).status, 200);
  } finally {
    await lb.stop();
    await a.close();
    await b.close();
    await redis.stop();
  }
});
