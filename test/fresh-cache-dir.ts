// Benches build their probes into the cache dir ($KVPACK_CACHE_DIR): tests that build one point it at a
// fresh temporary dir, so they prove the build and never reuse (or leave) a binary.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs fn with KVPACK_CACHE_DIR set to a new temporary dir, removed after; the variable is restored. */
export async function inFreshCacheDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-probe-'));
  const prev = process.env.KVPACK_CACHE_DIR;
  process.env.KVPACK_CACHE_DIR = dir;
  try {
    await fn(dir);
  } finally {
    if (prev === undefined) delete process.env.KVPACK_CACHE_DIR;
    else process.env.KVPACK_CACHE_DIR = prev;
    rmSync(dir, { recursive: true, force: true });
  }
}
