// The repository's source files below a folder, for the tests that read code as text (error allowlist,
// layer internals, default context, browser twins).
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fromRoot } from './paths.js';

/** Repo-relative paths (forward slashes) of the .ts files below `dir` (repo-relative), tests included unless `tests` is false. */
export function sourceFiles(dir: string, tests = true): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts') && (tests || !name.endsWith('.test.ts'))) out.push(relative(fromRoot(), p).split(sep).join('/'));
    }
  };
  walk(fromRoot(dir));
  return out.sort();
}
