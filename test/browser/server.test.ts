// `kvpack web`'s server without a browser: isolation headers, the model listing (GGUF files and HF
// directories), HTTP Range on model files, nothing but listed files served from the models directory (no
// path traversal, no symlinks out), and one-line errors for bad flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWebServer } from '../../src/web/server.js';
import { fromRoot } from '../paths.js';

function withDir(fn: (dir: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvpack-web-server-'));
    try {
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

test(
  'web server: COOP/COEP on the page, models listed and served with Range, other files refused',
  withDir(async (dir) => {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i % 251);
    writeFileSync(join(dir, 'm.gguf'), bytes);
    writeFileSync(join(dir, 'notes.txt'), 'not a model');
    const s = await startWebServer({ port: 0, host: '127.0.0.1', models: dir });
    try {
      const page = await fetch(s.url);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('cross-origin-opener-policy'), 'same-origin');
      assert.equal(page.headers.get('cross-origin-embedder-policy'), 'require-corp');
      assert.match(await page.text(), /<title>kvpack in the browser<\/title>/);
      assert.deepEqual(await (await fetch(`${s.url}models.json`)).json(), [{ kind: 'gguf', name: 'm.gguf', size: 1000 }]);
      const part = await fetch(`${s.url}models/m.gguf`, { headers: { Range: 'bytes=100-199' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), 'bytes 100-199/1000');
      assert.equal(part.headers.get('cross-origin-embedder-policy'), 'require-corp');
      assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.subarray(100, 200));
      assert.equal((await fetch(`${s.url}models/notes.txt`)).status, 404);
      assert.equal((await fetch(`${s.url}models/absent.gguf`)).status, 404);
      for (const f of ['app.js', 'engine-worker.js', 'pool-worker.js', 'kvpack.js', 'style.css']) assert.equal((await fetch(s.url + f)).status, 200, f);
    } finally {
      await s.close();
    }
  }),
);

/** GET `path` exactly as written (fetch would resolve '..' segments before sending). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    request({ host: u.hostname, port: u.port, path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

test(
  'web server: HF directories listed with their files and served with Range; nothing else, no traversal',
  withDir(async (root) => {
    const dir = join(root, 'models');
    const hf = join(dir, 'tiny-hf');
    mkdirSync(join(hf, 'sub'), { recursive: true });
    const weights = Uint8Array.from({ length: 3000 }, (_, i) => (i * 7) % 256);
    const config = '{"architectures": ["LlamaForCausalLM"]}';
    writeFileSync(join(hf, 'config.json'), config);
    writeFileSync(join(hf, 'model.safetensors'), weights);
    writeFileSync(join(hf, 'tokenizer.json'), '{}');
    writeFileSync(join(hf, 'README.md'), 'not a model file');
    writeFileSync(join(hf, 'sub', 'model.safetensors'), 'nested');
    // Not HF directories: no safetensors; no config.json.
    mkdirSync(join(dir, 'config-only'));
    writeFileSync(join(dir, 'config-only', 'config.json'), '{}');
    mkdirSync(join(dir, 'weights-only'));
    writeFileSync(join(dir, 'weights-only', 'model.safetensors'), 'x');
    // Outside DIR, reachable only through links inside it.
    const secret = join(root, 'secret');
    mkdirSync(secret);
    writeFileSync(join(secret, 'config.json'), 'SECRET');
    writeFileSync(join(secret, 'model.safetensors'), 'SECRET');
    writeFileSync(join(root, 'secret.gguf'), 'SECRET');
    symlinkSync(secret, join(dir, 'linked-hf'));
    symlinkSync(join(root, 'secret.gguf'), join(dir, 'linked.gguf'));
    symlinkSync(join(secret, 'model.safetensors'), join(hf, 'model-00002-of-00002.safetensors'));
    const s = await startWebServer({ port: 0, host: '127.0.0.1', models: dir });
    try {
      assert.deepEqual(await (await fetch(`${s.url}models.json`)).json(), [
        {
          kind: 'hf',
          name: 'tiny-hf',
          size: 3000 + config.length + 2,
          files: [
            { name: 'config.json', size: config.length },
            { name: 'model.safetensors', size: 3000 },
            { name: 'tokenizer.json', size: 2 },
          ],
        },
      ]);
      const part = await fetch(`${s.url}models/tiny-hf/model.safetensors`, { headers: { Range: 'bytes=1000-2999' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), 'bytes 1000-2999/3000');
      assert.equal(part.headers.get('cross-origin-resource-policy'), 'same-origin');
      assert.deepEqual(new Uint8Array(await part.arrayBuffer()), weights.subarray(1000));
      assert.equal(await (await fetch(`${s.url}models/tiny-hf/config.json`)).text(), config);
      const refused = [
        '/models/tiny-hf/README.md',
        '/models/tiny-hf/sub/model.safetensors',
        '/models/tiny-hf/',
        '/models/tiny-hf',
        '/models/config-only/config.json',
        '/models/weights-only/model.safetensors',
        '/models/linked-hf/config.json',
        '/models/linked-hf/model.safetensors',
        '/models/linked.gguf',
        '/models/tiny-hf/model-00002-of-00002.safetensors',
        '/models/../secret.gguf',
        '/models/tiny-hf/../../secret.gguf',
        '/models/%2e%2e/secret.gguf',
        '/models/tiny-hf/..%2f..%2fsecret.gguf',
        '/models/tiny-hf/%2e%2e/%2e%2e/secret/config.json',
        '/models//tiny-hf/config.json',
        '/models/./tiny-hf/config.json',
        '/models/tiny-hf%2fconfig.json/..%2f..%2f..%2fsecret.gguf',
        '/models/tiny-hf/..\\..\\secret.gguf',
        '/models/%2fetc%2fpasswd',
      ];
      for (const path of refused) {
        const r = await rawGet(s.url, path);
        assert.ok(r.status === 403 || r.status === 404, `${path}: HTTP ${r.status}`);
        assert.doesNotMatch(r.body, /SECRET|not a model file|nested/, path);
      }
      // The control: the same raw client does fetch a listed file.
      assert.equal((await rawGet(s.url, '/models/tiny-hf/tokenizer.json')).body, '{}');
    } finally {
      await s.close();
    }
  }),
);

test('web server: --no-isolation leaves the headers out; no --models lists nothing', async () => {
  const s = await startWebServer({ port: 0, host: '127.0.0.1', isolation: false });
  try {
    const page = await fetch(s.url);
    assert.equal(page.headers.get('cross-origin-opener-policy'), null);
    assert.deepEqual(await (await fetch(`${s.url}models.json`)).json(), []);
  } finally {
    await s.close();
  }
});

test('kvpack web: a missing models directory and a bad port are one-line errors', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), 'web', ...args], { encoding: 'utf8', timeout: 20_000 });
  const missing = run('--port', '0', '--models', '/nonexistent/models');
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr.trim(), "kvpack: --models: '/nonexistent/models' is not a directory");
  const port = run('--port', '99999');
  assert.equal(port.status, 2);
  assert.match(port.stderr, /--port must be in \[0, 65535\], got 99999/);
  assert.doesNotMatch(port.stderr, /\n\s+at /);
});

test('kvpack web --port 0: prints the URL it serves the page on', async () => {
  const child = spawn(process.execPath, [fromRoot('bin', 'kvpack.js'), 'web', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    child.stdout.setEncoding('utf8');
    while (!/http:\/\/\S+\//.test(out)) {
      const [chunk] = (await Promise.race([once(child.stdout, 'data'), once(child, 'exit').then(() => [''])])) as [string];
      if (!chunk) break;
      out += chunk;
    }
    const url = /http:\/\/\S+\//.exec(out)?.[0];
    assert.ok(url, `no URL in: ${out}`);
    assert.match(out, /no --models: pick a local GGUF or Hugging Face folder in the page/);
    assert.equal((await fetch(url)).status, 200);
  } finally {
    child.kill();
  }
});
