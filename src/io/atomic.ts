// Atomic publication: a file or directory is written beside its target and renamed into place, so a crash
// or a failed write never leaves half of it under the target name (rename is atomic on one filesystem).
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';

let seq = 0;

/** Writes data to `path` through `<path>.tmp-<pid>-<n>` and a rename; the temp file is removed on failure. */
export function writeAtomic(path: string, data: string | Uint8Array | readonly Uint8Array[]): void {
  const tmp = `${path}.tmp-${process.pid}-${seq++}`;
  try {
    if (typeof data === 'string' || data instanceof Uint8Array) writeFileSync(tmp, data);
    else writeFileSync(tmp, Buffer.concat(data as Uint8Array[]));
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Like writeAtomic, with `write` filling the temp file through its descriptor (files too big for one buffer). */
export function writeAtomicWith(path: string, write: (fd: number) => void): void {
  const tmp = `${path}.tmp-${process.pid}-${seq++}`;
  try {
    const fd = openSync(tmp, 'w');
    try {
      write(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Creates and returns a fresh `<out>.partial-<pid>-<n>` directory to fill before publishDir. */
export function partialDir(out: string): string {
  let tmp: string;
  do tmp = `${out}.partial-${process.pid}-${seq++}`;
  while (existsSync(tmp));
  mkdirSync(tmp);
  return tmp;
}

/** Renames a finished partial directory to `out` (the caller checked that `out` does not exist). */
export function publishDir(tmp: string, out: string): void {
  renameSync(tmp, out);
}
