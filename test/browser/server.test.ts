// `kvpack web`'s server without a browser: isolation headers, the model listing, HTTP Range on model files,
// nothing but .gguf served from the models directory, and one-line errors for bad flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

test('web server: COOP/COEP on the page, models listed and served with Range, other files refused', withDir(async (dir) => {
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
    assert.deepEqual(await (await fetch(`${s.url}models.json`)).json(), [{ name: 'm.gguf', size: 1000 }]);
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
}));

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
    assert.match(out, /no --models: pick a local GGUF in the page/);
    assert.equal((await fetch(url)).status, 200);
  } finally {
    child.kill();
  }
});
