// Browser twin of dir-files.ts (scripts/build-browser.mjs swaps it in): a page has no paths, only the
// ModelFiles of a picked folder or a served directory (web-files.ts).
import { ArgumentError } from '../errors.js';
import type { ModelFiles } from './model-files.js';

const noPaths = (path: string) =>
  new ArgumentError(`'${path}': directory paths need Node; in a browser open a picked folder or a served directory (hf/web-files.ts)`);

export function isHfDir(path: string): boolean {
  throw noPaths(path);
}

export function dirFiles(dir: string): ModelFiles {
  throw noPaths(dir);
}

export function asModelFiles(dir: string | ModelFiles): ModelFiles {
  if (typeof dir === 'string') throw noPaths(dir);
  return dir;
}
