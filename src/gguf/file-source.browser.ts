// Browser twin of file-source.ts (scripts/build-browser.mjs swaps it in): a page has no file paths.
import { ArgumentError } from '../errors.js';
import type { ByteSource } from './source.js';

export function fileSource(path: string): ByteSource {
  throw new ArgumentError(`'${path}': file paths need Node; in a browser read a File/Blob, an ArrayBuffer or a URL (gguf/web-sources.ts)`);
}

export function isGgufFile(path: string, _what = 'file'): boolean {
  return fileSource(path) !== null;
}
