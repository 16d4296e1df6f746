// Opening and reading files a user named (models, prompts, cache files, captures): an OS error becomes a
// FileAccessError naming the path and the reason in words, never a raw ENOENT with a stack trace.
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { FileAccessError, KvpackError } from '../errors.js';

/** Node's error codes on a path, in words. */
const REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory, not a file',
  ENOTDIR: 'a parent of the path is not a directory',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the path is too long',
  EMFILE: 'too many open files',
};

/** The error to throw for an fs failure on `path` (what = 'model file', 'prompts file', ...). */
export function accessError(e: unknown, path: string, what: string): Error {
  if (e instanceof KvpackError) return e;
  const code = (e as NodeJS.ErrnoException)?.code;
  if (typeof code !== 'string') return e as Error;
  return new FileAccessError(what, path, REASONS[code] ?? (e as Error).message, e);
}

/** Opens a regular file for reading; a directory or any OS error is a FileAccessError. */
export function openForRead(path: string, what: string): number {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw accessError(e, path, what);
  }
  try {
    if (fstatSync(fd).isDirectory()) throw new FileAccessError(what, path, REASONS['EISDIR']!);
  } catch (e) {
    closeSync(fd);
    throw accessError(e, path, what);
  }
  return fd;
}

/** The whole file; OS errors as FileAccessError. */
export function readWholeFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw accessError(e, path, what);
  }
}
