// Real Chromium for the browser tests: Debian's /usr/bin/chromium (KVPACK_CHROMIUM overrides) driven by
// playwright-core, which downloads no browser. Pages are read through the ids the page writes at the end
// of a run (#kvpack-tokens, #kvpack-bytes, #kvpack-threads).
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env['KVPACK_CHROMIUM'] ?? '/usr/bin/chromium';

/** '' when Chromium is there, else why the browser tests skip. */
export function chromiumMissing(): string {
  return existsSync(CHROMIUM) ? '' : `no Chromium at ${CHROMIUM} (Debian: apt-get install -y chromium; .ci/run installs it)`;
}

export function launchChromium(): Promise<Browser> {
  // Chromium refuses its sandbox as root (CI containers).
  const root = process.getuid?.() === 0;
  return chromium.launch({ executablePath: CHROMIUM, args: root ? ['--no-sandbox'] : [] });
}

export interface PageRun {
  state: string;
  status: string;
  tokens: number[];
  bytes: number;
  /** The readout's "f16 would take" and the positions it is for. */
  f16Bytes: number;
  positions: number;
  threadsText: string;
  workers: number;
  calls: number;
  divergence: string;
}

/** Waits until the page reports a finished run (or an error) and reads its result. */
export async function readRun(page: Page, timeoutMs = 60_000): Promise<PageRun> {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset['state'] ?? ''), null, { timeout: timeoutMs });
  return page.evaluate(() => {
    const text = (id: string) => document.getElementById(id)?.textContent ?? '';
    const t = document.getElementById('kvpack-threads')!;
    const ids = text('kvpack-tokens').trim();
    return {
      state: document.body.dataset['state'] ?? '',
      status: text('status'),
      tokens: ids ? ids.split(' ').map(Number) : [],
      bytes: Number(text('kvpack-bytes')),
      f16Bytes: Number(document.getElementById('kvpack-bytes')!.dataset['f16']),
      positions: Number(document.getElementById('kvpack-bytes')!.dataset['positions']),
      threadsText: t.textContent ?? '',
      workers: Number(t.dataset['workers'] ?? NaN),
      calls: Number(t.dataset['calls'] ?? NaN),
      divergence: document.getElementById('divergence')!.hidden ? '' : text('divergence'),
    };
  });
}

/** A new page that fails the test on any uncaught page error; returns it and the errors seen. */
export async function openPage(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  return { page, errors };
}
