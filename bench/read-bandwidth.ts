// The machine's read bandwidth now (bench/native/read-bandwidth.c, built once with the C compiler into the
// cache dir): recorded beside each timed run, since another tenant's memory traffic on the host slows a
// memory-bound decode without showing in this machine's load or CPU (2-thread reads varied 27-56 GB/s
// within a minute on a quiet-looking VM here). Without a C compiler the probe is off and says so once.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './cache-dir.js';

/** The probe's buffer (past the L3 of the machines here) and its passes (the best is kept): ~0.3 s a probe. */
const PROBE_MIB = 256;
const PROBE_PASSES = 5;

// dist-test/bench/read-bandwidth.js -> bench/native/read-bandwidth.c at the repo root.
const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'native', 'read-bandwidth.c');

let built: { bin: string } | { reason: string } | null = null;

/** The built probe, or why there is none (no source, no compiler, a failed build); built once per process. */
export function bandwidthProbe(): { bin: string } | { reason: string } {
  if (built) return built;
  if (!existsSync(SOURCE)) return (built = { reason: `no probe source at ${SOURCE}` });
  const src = readFileSync(SOURCE);
  const cc = process.env.CC ?? 'cc';
  const flags = ['-O3', ...(process.arch === 'x64' ? ['-march=native'] : []), '-pthread'];
  const key = createHash('sha256').update(src).update(flags.join(' ')).digest('hex').slice(0, 12);
  const bin = join(cacheRoot(), `read-bandwidth-${key}`);
  if (existsSync(bin)) return (built = { bin });
  if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status !== 0) return (built = { reason: `${cc} is not installed: no read-bandwidth probe` });
  try {
    mkdirSync(cacheRoot(), { recursive: true });
    execFileSync(cc, [...flags, SOURCE, '-o', bin], { stdio: ['ignore', 'pipe', 'pipe'] });
    return (built = { bin });
  } catch (e) {
    const last = ((e as { stderr?: Buffer }).stderr?.toString() ?? String(e)).trim().split('\n').pop();
    return (built = { reason: `building the read-bandwidth probe failed: ${last}` });
  }
}

/** GB/s read by `threads` threads now (best of the probe's passes), or null when there is no probe. */
export function readBandwidthNow(threads: number): number | null {
  const p = bandwidthProbe();
  if (!('bin' in p)) return null;
  const out = execFileSync(p.bin, [`${PROBE_MIB}`, `${threads}`, `${PROBE_PASSES}`], { encoding: 'utf8' });
  const gbs = Number(out.trim().split(/\s+/)[0]);
  if (!(gbs > 0)) throw new Error(`read-bandwidth probe printed ${JSON.stringify(out)}`);
  return gbs;
}
