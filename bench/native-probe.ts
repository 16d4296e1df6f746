// A small C probe of the machine (bench/native/<name>.c), built once with the C compiler into the cache dir:
// what the read-bandwidth and multiply-add probes share. Without a compiler the probe is off and says why.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './cache-dir.js';

export type Probe = { bin: string } | { reason: string };

const built = new Map<string, Probe>();

/** The built probe `name` (dist-test/bench/*.js -> bench/native/<name>.c at the repo root), or why there is none. */
export function nativeProbe(name: string): Probe {
  const have = built.get(name);
  if (have) return have;
  const done = (p: Probe) => (built.set(name, p), p);
  const source = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'native', `${name}.c`);
  if (!existsSync(source)) return done({ reason: `no probe source at ${source}` });
  const src = readFileSync(source);
  const cc = process.env.CC ?? 'cc';
  const flags = ['-O3', ...(process.arch === 'x64' ? ['-march=native'] : []), '-pthread'];
  const key = createHash('sha256').update(src).update(flags.join(' ')).digest('hex').slice(0, 12);
  const bin = join(cacheRoot(), `${name}-${key}`);
  if (existsSync(bin)) return done({ bin });
  if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status !== 0) return done({ reason: `${cc} is not installed: no ${name} probe` });
  try {
    mkdirSync(cacheRoot(), { recursive: true });
    execFileSync(cc, [...flags, source, '-o', bin], { stdio: ['ignore', 'pipe', 'pipe'] });
    return done({ bin });
  } catch (e) {
    const last = ((e as { stderr?: Buffer }).stderr?.toString() ?? String(e)).trim().split('\n').pop();
    return done({ reason: `building the ${name} probe failed: ${last}` });
  }
}

/** The probe's one printed number (a positive rate), or null when there is no probe. */
export function runProbe(name: string, args: readonly string[]): number | null {
  const p = nativeProbe(name);
  if (!('bin' in p)) return null;
  const out = execFileSync(p.bin, args, { encoding: 'utf8' });
  const x = Number(out.trim().split(/\s+/)[0]);
  if (!(x > 0)) throw new Error(`${name} probe printed ${JSON.stringify(out)}`);
  return x;
}
