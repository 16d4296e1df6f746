// Locates the repo root (the nearest directory holding package.json above this module), so fixtures resolve
// the same way from dist-test/test/*.js and from test/*.ts run by tsx.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRepoRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${start}`);
    dir = up;
  }
}

/** Absolute path of the repository root. */
export const repoRoot: string = findRepoRoot(dirname(fileURLToPath(import.meta.url)));

/** Absolute path of a file or directory given relative to the repo root. */
export function fromRoot(...parts: string[]): string {
  return join(repoRoot, ...parts);
}
