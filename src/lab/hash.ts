// sha256 of files and of the kvpack code that runs (LF-normalized, so a CRLF checkout hashes the same).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileFormatError } from '../errors.js';

export function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** sha256 of a file's original bytes (evidence files are never normalized). */
export function sha256File(path: string): string {
  return sha256(readFileSync(path));
}

/** The repo root: the nearest ancestor of this module holding kvpack's package.json. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'kvpack') return dir;
      } catch {
        // Not our package.json; keep walking up.
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new FileFormatError('repo', 'no kvpack package.json above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

/**
 * The tree of modules this process runs: dist/src when kvpack runs compiled (an installed package has only
 * that), dist-test/src in the test build (which holds the tests too: the listing leaves them out), src when
 * run from TypeScript (tsx). This module sits in its lab/ folder.
 */
export function codeRoot(): string {
  return dirname(dirname(fileURLToPath(import.meta.url)));
}

/** Files of the code tree that run: modules (.js compiled, .ts under tsx), no tests, maps or declarations. */
const RUNS = /\.(js|mjs|ts)$/;
const NOT_RUN = /(\.test\.(js|ts)|\.d\.ts)$/;

function listFiles(dir: string, out: string[], keep: (p: string) => boolean): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) listFiles(p, out, keep);
    else if (keep(p)) out.push(p);
  }
}

/**
 * The source listing: one "sha256  path" line per module of the running code tree (`code`, default
 * codeRoot()) and per file under protocols/ (posix paths relative to `root`, sorted, contents with CRLF ->
 * LF). Its own sha256 is the tree hash a manifest records.
 */
export function sourceListing(root = repoRoot(), code = codeRoot()): string {
  const files: string[] = [];
  if (existsSync(code)) listFiles(code, files, (p) => RUNS.test(p) && !NOT_RUN.test(p));
  if (existsSync(join(root, 'protocols'))) listFiles(join(root, 'protocols'), files, () => true);
  const rows = files.map((p) => {
    const rel = relative(root, p).split(sep).join('/');
    const text = readFileSync(p).toString('latin1').replace(/\r\n/g, '\n');
    return `${sha256(Buffer.from(text, 'latin1'))}  ${rel}`;
  });
  rows.sort((a, b) => (a.slice(66) < b.slice(66) ? -1 : a.slice(66) > b.slice(66) ? 1 : 0));
  return rows.join('\n') + '\n';
}
