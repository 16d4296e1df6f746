// The load a bench records beside each run: the host's read bandwidth varying across a bench (another
// tenant's memory traffic, invisible in this machine's load) makes machineNote refuse the bench's ratios.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { inFreshCacheDir } from './fresh-cache-dir.js';
import { fmtLoad, machineNote, type RunLoad } from '../bench/native-llama.js';

const run = (readGBs: number | null): RunLoad => ({ before: { load1: 0.3, running: 1 }, after: { load1: 0.4, running: 1 }, otherCores: 0, readGBs });

test('bench load: read-bandwidth probes spread past 0.7 of their best refuse the ratios of the bench', () => {
  const loads = [run(40), run(38), run(20)];
  assert.match(machineNote(loads) ?? '', /read bandwidth varied 20\.0-40\.0 GB\/s over the probes before 3 runs/);
  assert.deepEqual(
    loads.map((l) => fmtLoad(l)),
    ['0.30->0.40 40 GB/s', '0.30->0.40 38 GB/s', '0.30->0.40 20 GB/s'],
  );
  // Negative controls: steady bandwidth, or no probe at all, flag nothing.
  assert.equal(machineNote([run(40), run(29)]), null);
  assert.equal(machineNote([run(null), run(null)]), null);
  assert.equal(fmtLoad(run(null)), '0.30->0.40');
});

test(
  'bench load: the read-bandwidth probe builds into the cache dir and reads at a plausible rate',
  {
    skip: spawnSync('cc', ['--version']).status !== 0 && 'no C compiler',
  },
  () =>
    inFreshCacheDir(async (dir) => {
      const { bandwidthProbe, readBandwidthNow } = await import('../bench/read-bandwidth.js');
      const p = bandwidthProbe();
      assert.ok('bin' in p && p.bin.startsWith(dir), JSON.stringify(p));
      const gbs = readBandwidthNow(1)!;
      // A 256 MiB read: slower than 0.5 GB/s or faster than 2 TB/s means it did not read what it reports.
      assert.ok(gbs > 0.5 && gbs < 2000, `${gbs} GB/s`);
    }),
);
