// A model directory by path (Node's fs): the ModelFiles the loader reads in Node, and what `-m` treats as
// a Hugging Face directory. The browser build swaps in dir-files.browser.ts (a page has no paths).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ArgumentError, FileFormatError } from '../errors.js';
import { fileSource } from '../gguf/source.js';
import { CONFIG_FILE } from './config.js';
import { hasFile, noSuchFile, type ModelFiles } from './model-files.js';

/**
 * True for a directory holding a config.json (what `-m` treats as a Hugging Face model), false for a file;
 * a missing path or another directory is an error naming it (model loaders call this first).
 */
export function isHfDir(path: string): boolean {
  // A missing path is not an HF directory: the file loaders that follow say what is wrong with it.
  if (!existsSync(path) || !statSync(path).isDirectory()) return false;
  if (!existsSync(join(path, CONFIG_FILE))) throw new FileFormatError('hf', `${path}: a directory without ${CONFIG_FILE} (not a Hugging Face model directory)`);
  return true;
}

/** The regular files directly in `dir` (symlinks followed: the Hub's cache links snapshots to blobs). */
export function dirFiles(dir: string): ModelFiles {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ArgumentError(`${dir}: no such directory`);
  const names = readdirSync(dir).filter((n) => {
    try {
      return statSync(join(dir, n)).isFile();
    } catch {
      return false; // a dangling link is no file
    }
  });
  const files: ModelFiles = {
    name: basename(resolve(dir)),
    location: dir,
    names,
    locate: (file) => join(dir, file),
    open(file) {
      if (!hasFile(files, file)) throw noSuchFile(files, file);
      try {
        return fileSource(join(dir, file));
      } catch (e) {
        throw new FileFormatError('hf', `${join(dir, file)}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    },
  };
  return files;
}

/** A directory path opened as ModelFiles; ModelFiles pass through. */
export function asModelFiles(dir: string | ModelFiles): ModelFiles {
  return typeof dir === 'string' ? dirFiles(dir) : dir;
}
