// The `kvpack web` page in real Chromium: greedy tokens under f16 and q2k equal the Node engine's (`kvpack
// run`) with and without threads, the cache-bytes readout equals `kvpack memory` for that shape, compare
// mode finds the first divergence, a prompt over 256 tokens gives run's tokens, a picked local file loads, a page without COOP/COEP runs on one thread,
// and the parity gate passes in the browser. Saves screenshots under test-artifacts/browser/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { readGguf } from '../../src/gguf/reader.js';
import { modelFromGguf } from '../../src/gguf/model.js';
import { startWebServer, type WebServer } from '../../src/web/server.js';
import { firstDivergence } from '../../src/web/divergence.js';
import { fromRoot } from '../paths.js';
import { chromiumMissing, launchChromium, openPage, readRun } from './harness.js';
import { testModel, type TestModel } from './fixture-model.js';

const skip = chromiumMissing() || false;
if (skip) console.log(`# browser tests skipped: ${skip}`);

const PROMPT = 'Once upon a time';
/** Over 256 tokens: prefilled in more than one batch, packed reads before the window (issue 20). */
const LONG_PROMPT = 'Once upon a time there was a little girl who liked to walk in the woods near her house. She saw a bird, a cat and a dog. '.repeat(12);
const N = 40;
const WINDOW = 16;
const SINKS = 4;
const ANCHORS = 4;
/** Compare mode runs longer: past the exact window and sinks, the bar shows the bulk's saving. */
const N_COMPARE = 160;
const ARTIFACTS = fromRoot('test-artifacts', 'browser');
/** Threads only run where the machine has a second core. */
const MULTI_CORE = availableParallelism() >= 2;

let browser: Browser;
let isolated: WebServer;
let plain: WebServer;
let model: TestModel;
const node = new Map<string, { tokens: number[]; promptTokens: number[]; stopReason: string; cacheBytes: { total: number; anchors: number } }>();

const kvpack = (...args: string[]): string => execFileSync(process.execPath, [fromRoot('bin', 'kvpack.js'), ...args], { encoding: 'utf8' });
const query = (o: Record<string, string | number>) => `?${new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)]))}`;
const runQuery = (scheme: string, threads: number, extra: Record<string, string | number> = {}) =>
  query({ model: model.name, prompt: PROMPT, n: N, scheme, window: WINDOW, sinks: SINKS, threads, autorun: 1, ...extra });

before(async () => {
  if (skip) return;
  model = testModel();
  console.log(`# browser tests: ${model.label}`);
  const run = (scheme: string, ...extra: string[]) =>
    JSON.parse(
      kvpack(
        'run',
        '-m',
        join(model.dir, model.name),
        '-p',
        PROMPT,
        '--kv',
        scheme,
        '--kv-window',
        String(WINDOW),
        '--sinks',
        String(SINKS),
        '--temp',
        '0',
        '--json',
        '-n',
        String(N),
        ...extra,
      ),
    );
  for (const scheme of ['f16', 'q2k']) node.set(scheme, run(scheme));
  node.set('q2k anchors', run('q2k', '--anchors', String(ANCHORS)));
  for (const scheme of ['f16', 'q2k']) node.set(`${scheme} long`, run(scheme, '-n', String(N_COMPARE)));
  node.set(
    'q2k long prompt',
    JSON.parse(
      kvpack(
        'run',
        '-m',
        join(model.dir, model.name),
        '-p',
        LONG_PROMPT,
        '--kv',
        'q2k',
        '--kv-window',
        String(WINDOW),
        '--sinks',
        String(SINKS),
        '--temp',
        '0',
        '--json',
        '-n',
        '16',
      ),
    ),
  );
  isolated = await startWebServer({ port: 0, host: '127.0.0.1', models: model.dir });
  plain = await startWebServer({ port: 0, host: '127.0.0.1', models: model.dir, isolation: false });
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  await isolated?.close();
  await plain?.close();
  if (model?.temporary) rmSync(model.dir, { recursive: true, force: true });
});

const shape = () => modelFromGguf(readGguf(join(model.dir, model.name))).hparams;

/** `kvpack memory`'s total for the model's shape at `ctx` positions. */
function memoryTotal(scheme: string, ctx: number): number {
  const hp = shape();
  const out = JSON.parse(
    kvpack(
      'memory',
      '--ctx',
      String(ctx),
      '--layers',
      String(hp.nLayer),
      '--kv-heads',
      String(hp.nHeadKv),
      '--head-dim',
      String(hp.headDim),
      '--window',
      String(WINDOW),
      '--sinks',
      String(SINKS),
      '--json',
    ),
  ) as { schemes: { scheme: string; totalBytes: number }[] };
  return out.schemes.find((s) => s.scheme === scheme)!.totalBytes;
}

for (const threads of [1, 2]) {
  test(`page: greedy f16 and q2k tokens equal the Node engine's, ${threads} thread(s); cache bytes equal kvpack memory`, { skip }, async () => {
    const hp = shape();
    for (const scheme of ['f16', 'q2k']) {
      const want = node.get(scheme)!;
      const { page, errors } = await openPage(browser, isolated.url + runQuery(scheme, threads));
      const r = await readRun(page);
      await page.close();
      assert.equal(r.state, 'done', r.status);
      assert.deepEqual(errors, []);
      assert.deepEqual(r.tokens, want.tokens, `${scheme}: page tokens differ from kvpack run's`);
      // The cache holds the prompt and the generated tokens, but not the last one when the run hit -n
      // (its logits would go unused); after an EOS every generated token was fed.
      const ctx = want.promptTokens.length + want.tokens.length - (want.stopReason === 'length' ? 1 : 0);
      assert.equal(r.bytes, memoryTotal(scheme, ctx), `${scheme}: #kvpack-bytes vs kvpack memory --ctx ${ctx}`);
      assert.equal(r.bytes, want.cacheBytes.total);
      // The bar's yardstick: every held position in f16, 2 bytes per K and V value.
      assert.equal(r.positions, ctx);
      assert.equal(r.f16Bytes, ctx * hp.nLayer * hp.nHeadKv * hp.headDim * 2 * 2);
      if (threads === 1) {
        assert.equal(r.workers, 0, r.threadsText);
        assert.equal(r.calls, 0, r.threadsText);
      } else if (MULTI_CORE) {
        // The proof the Web Worker ran: matmul row shares were handed to it.
        assert.equal(r.workers, 1, r.threadsText);
        assert.ok(r.calls > 0, r.threadsText);
      }
    }
  });
}

test("page: a prompt over 256 tokens under q2k gives kvpack run's tokens (batch-invariant prefill)", { skip }, async () => {
  const want = node.get('q2k long prompt')!;
  assert.ok(want.promptTokens.length > 256, `${want.promptTokens.length} prompt tokens`);
  const { page, errors } = await openPage(
    browser,
    isolated.url + query({ model: model.name, prompt: LONG_PROMPT, n: 16, scheme: 'q2k', window: WINDOW, sinks: SINKS, threads: 2, autorun: 1 }),
  );
  const r = await readRun(page);
  await page.close();
  assert.equal(r.state, 'done', r.status);
  assert.deepEqual(errors, []);
  assert.deepEqual(r.tokens, want.tokens);
});

test('page: compare mode shows where q2k first leaves f16 (screenshot saved)', { skip }, async () => {
  const { page, errors } = await openPage(browser, isolated.url + runQuery('q2k', 2, { compare: 1, n: N_COMPARE }));
  await page.setViewportSize({ width: 1100, height: 900 });
  const r = await readRun(page);
  const shot = join(ARTIFACTS, 'page-compare.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`# screenshot: ${shot}`);
  await page.close();
  assert.equal(r.state, 'done', r.status);
  assert.deepEqual(errors, []);
  assert.deepEqual(r.tokens, node.get('q2k long')!.tokens);
  // The shared model runs past the exact regions; the fallback's random weights may stop at EOS first.
  if (!model.temporary) assert.ok(r.bytes < r.f16Bytes, `at ${r.positions} positions q2k (${r.bytes} B) is below f16 (${r.f16Bytes} B)`);
  const at = firstDivergence(node.get('f16 long')!.tokens, node.get('q2k long')!.tokens);
  assert.match(r.divergence, at < 0 ? /exactly the f16 tokens/ : new RegExp(`^First divergence at generated token ${at}:`));
});

test('page: a picked local GGUF (File source) with decode anchors generates the same tokens', { skip }, async () => {
  const { page, errors } = await openPage(
    browser,
    isolated.url + query({ prompt: PROMPT, n: N, scheme: 'q2k', window: WINDOW, sinks: SINKS, anchors: ANCHORS, threads: 1 }),
  );
  await page.setInputFiles('#file', join(model.dir, model.name));
  await page.click('#run');
  const r = await readRun(page);
  await page.close();
  assert.equal(r.state, 'done', r.status);
  assert.deepEqual(errors, []);
  const want = node.get('q2k anchors')!;
  assert.deepEqual(r.tokens, want.tokens);
  assert.equal(r.bytes, want.cacheBytes.total);
  if (want.tokens.length > 1) assert.ok(want.cacheBytes.anchors > 0, 'the anchors region holds bytes');
});

test('page: without COOP/COEP the engine runs on one thread with the same tokens', { skip }, async () => {
  const { page, errors } = await openPage(browser, plain.url + runQuery('q2k', 2));
  const r = await readRun(page);
  const note = await page.textContent('#isolation');
  await page.close();
  assert.equal(r.state, 'done', r.status);
  assert.deepEqual(errors, []);
  assert.match(note ?? '', /Not cross-origin isolated/);
  assert.match(r.threadsText, /^1 of 2 wanted \(the page is not cross-origin isolated/);
  assert.equal(r.workers, 0);
  assert.deepEqual(r.tokens, node.get('q2k')!.tokens);
});

test('page: bad URL parameters and a missing model are reported in one line', { skip }, async () => {
  let { page } = await openPage(browser, isolated.url + query({ scheme: 'bogus', n: 'many' }));
  await page.waitForFunction(() => /Ignored URL parameters/.test(document.getElementById('status')?.textContent ?? ''));
  const status = (await page.textContent('#status')) ?? '';
  assert.match(status, /scheme 'bogus' is not one of f16, /);
  assert.match(status, /n must be an integer in \[1, 4096\], got 'many'/);
  await page.close();
  ({ page } = await openPage(browser, isolated.url + query({ model: 'absent.gguf', autorun: 1 })));
  const r = await readRun(page);
  await page.close();
  assert.equal(r.state, 'error');
  assert.match(r.status, /^Error: absent\.gguf: not found \(HTTP 404\)$/);
});

test('page: the parity gate (every kernel vs the reference) passes in Chromium, threads on', { skip }, async () => {
  const { page, errors } = await openPage(browser, isolated.url);
  await page.click('#check');
  await page.waitForFunction(() => document.body.dataset['check'] !== undefined || document.body.dataset['state'] === 'error', null, { timeout: 120_000 });
  const status = (await page.textContent('#status')) ?? '';
  await page.close();
  assert.deepEqual(errors, []);
  assert.match(status, /^Kernel check in this browser: [1-9]\d* passed, 0 failed/);
});
