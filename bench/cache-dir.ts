// Where benches keep what they build once (native llama-bench, the read-bandwidth probe): outside the repo.
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The cache root: $KVPACK_CACHE_DIR, else $XDG_CACHE_HOME/kvpack, else ~/.cache/kvpack. */
export function cacheRoot(): string {
  return process.env.KVPACK_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kvpack');
}
