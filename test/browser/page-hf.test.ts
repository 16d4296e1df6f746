// The `kvpack web` page loading a Hugging Face directory (the shared TinyStories-656K: config.json,
// model.safetensors, tokenizer.json) in real Chromium: served by `--models DIR` (read with HTTP Range) and
// picked locally (a folder, or its files together). Greedy tokens under f16 and q2k equal the Node
// engine's for the same directory, which equal the GGUF conversion's.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startWebServer, type WebServer } from '../../src/web/server.js';
import { fromRoot } from '../paths.js';
import { chromiumMissing, launchChromium, openPage, readRun, type PageRun } from './harness.js';

const MODELS = fromRoot('..', 'shared', 'models');
const NAME = 'tinystories-656k';
const DIR = join(MODELS, NAME);
const skip = chromiumMissing() || (existsSync(join(DIR, 'model.safetensors')) ? false : `${DIR} not present`);
if (skip) console.log(`# browser HF tests skipped: ${skip}`);

const PROMPT = 'Once upon a time';
const N = 40;
const WINDOW = 16;
const SINKS = 4;

let browser: Browser;
let server: WebServer;
const node = new Map<string, { tokens: number[]; cacheBytes: { total: number } }>();

const kvpack = (...args: string[]): string => execFileSync(process.execPath, [fromRoot('bin', 'kvpack.js'), ...args], { encoding: 'utf8' });
const run = (model: string, scheme: string) =>
  JSON.parse(
    kvpack('run', '-m', model, '-p', PROMPT, '--kv', scheme, '--kv-window', String(WINDOW), '--sinks', String(SINKS), '--temp', '0', '--json', '-n', String(N)),
  );
const query = (o: Record<string, string | number>) => `?${new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)]))}`;
const settings = (scheme: string, threads: number) => ({ prompt: PROMPT, n: N, scheme, window: WINDOW, sinks: SINKS, threads });

before(async () => {
  if (skip) return;
  for (const scheme of ['f16', 'q2k']) {
    const hf = run(DIR, scheme);
    // The directory and its GGUF conversion are one model: the page's HF tokens are the GGUF's too.
    if (existsSync(`${DIR}.gguf`)) assert.deepEqual(hf.tokens, run(`${DIR}.gguf`, scheme).tokens, `${scheme}: HF dir vs GGUF in Node`);
    node.set(scheme, hf);
  }
  server = await startWebServer({ port: 0, host: '127.0.0.1', models: MODELS });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

function sameAsNode(r: PageRun, errors: string[], scheme: string): void {
  assert.equal(r.state, 'done', r.status);
  assert.deepEqual(errors, []);
  const want = node.get(scheme)!;
  assert.ok(want.tokens.length > 0);
  assert.deepEqual(r.tokens, want.tokens, `${scheme}: page tokens differ from kvpack run's`);
  assert.equal(r.bytes, want.cacheBytes.total, `${scheme}: cache bytes`);
}

test("page, served HF directory: listed, read with Range, f16 and q2k tokens equal the Node engine's", { skip }, async () => {
  for (const [scheme, threads] of [
    ['f16', 1],
    ['q2k', 2],
  ] as const) {
    const page = await browser.newPage();
    // The Worker's reads of the served directory: [file, Range header].
    const reads: [string, string][] = [];
    page.on('request', (q) => {
      if (q.url().includes(`/models/${NAME}/`)) reads.push([q.url().slice(q.url().lastIndexOf('/') + 1), q.headers()['range'] ?? '']);
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(server.url + query({ model: NAME, ...settings(scheme, threads), autorun: 1 }));
    const r = await readRun(page);
    const option = await page.textContent(`#model option[value="${NAME}"]`);
    await page.close();
    assert.equal(option, `${NAME} (Hugging Face)`);
    sameAsNode(r, errors, scheme);
    // Every read is ranged; the weights move tensor by tensor, each byte at most once, never the whole file.
    const size = statSync(join(DIR, 'model.safetensors')).size;
    const spans = reads
      .filter(([f]) => f === 'model.safetensors')
      .map(([, h]) => /^bytes=(\d+)-(\d+)$/.exec(h))
      .map((m) => Number(m![2]) - Number(m![1]) + 1);
    assert.ok(
      reads.every(([, h]) => h.startsWith('bytes=')),
      JSON.stringify(reads),
    );
    assert.ok(
      spans.length > 2 && Math.max(...spans) < size / 2,
      `${spans.length} reads of model.safetensors, the largest ${Math.max(...spans)} B of ${size} B`,
    );
    assert.ok(spans.reduce((a, b) => a + b, 0) <= size);
  }
});

test("page, local HF folder (webkitdirectory) and the same files picked together: the Node engine's tokens", { skip }, async () => {
  const picks: [string, string, string | string[]][] = [
    ['q2k', '#folder', DIR],
    ['f16', '#file', readdirSync(DIR).map((f) => join(DIR, f))],
  ];
  for (const [scheme, input, files] of picks) {
    const { page, errors } = await openPage(browser, server.url + query(settings(scheme, 1)));
    await page.setInputFiles(input, files);
    const option = await page.evaluate(() => (document.getElementById('model') as HTMLSelectElement).selectedOptions[0]?.textContent ?? '');
    await page.click('#run');
    const r = await readRun(page);
    await page.close();
    assert.equal(option, input === '#folder' ? `local folder: ${NAME}` : 'local folder: picked files');
    sameAsNode(r, errors, scheme);
  }
  // A pick without config.json is no model: one line saying which file is missing.
  const { page } = await openPage(browser, server.url + query(settings('q2k', 1)));
  await page.setInputFiles(
    '#file',
    ['tokenizer.json', 'model.safetensors'].map((f) => join(DIR, f)),
  );
  await page.click('#run');
  const r = await readRun(page);
  await page.close();
  assert.equal(r.state, 'error');
  assert.equal(r.status, 'Error: hf: picked files/config.json: missing');
});

// The page lists the served models (models.json) after it loads; a folder picked before that listing lands
// stays the chosen model. Under load the listing once arrived after the pick and replaced it, so the run
// loaded the first served model instead (tokens different from the first one on): the listing is held here.
test('page, files picked before the served listing arrives: the pick stays chosen and runs', { skip }, async () => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  let release = (): void => {};
  const held = new Promise<void>((r) => (release = r));
  await page.route('**/models.json', async (route) => {
    await held;
    await route.continue();
  });
  await page.goto(server.url + query(settings('f16', 1)));
  await page.setInputFiles(
    '#file',
    readdirSync(DIR).map((f) => join(DIR, f)),
  );
  release();
  await page.waitForSelector(`#model option[value="${NAME}"]`, { state: 'attached' });
  const option = await page.evaluate(() => (document.getElementById('model') as HTMLSelectElement).selectedOptions[0]?.textContent ?? '');
  await page.click('#run');
  const r = await readRun(page);
  await page.close();
  assert.equal(option, 'local folder: picked files', 'the listing replaced the pick');
  sameAsNode(r, errors, 'f16');
});
