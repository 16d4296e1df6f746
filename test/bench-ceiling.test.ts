// The attention ceiling the deep-context targets are weighed against (bench/attention-ceiling.ts): its
// arithmetic on known figures, the pairing of rows, and the multiply-add probe it measures with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { inFreshCacheDir } from './fresh-cache-dir.js';
import { attentionMacs, attentionRate, ceilingLines, ceilingRows, ceilingTps } from '../bench/attention-ceiling.js';

const B8 = { layers: 32, heads: 32, headDim: 128 };

test('attention ceiling: multiply-adds, the rate an engine spent and the ceiling at a peak', () => {
  // 8B shape at 32K: 32 layers x 32 heads x 32768 positions x 128 x 2 (K scores and V sums).
  assert.equal(attentionMacs(B8, 32768), 8_589_934_592);
  const extra = attentionMacs(B8, 32768) - attentionMacs(B8, 1024);
  // A deep step 0.4 s slower than the 1K one spent the extra multiply-adds at extra / 0.4 s.
  const pair = { base: { context: 1024, tps: 6 }, deep: { context: 32768, tps: 1 / (1 / 6 + 0.4) } };
  assert.ok(Math.abs(attentionRate(B8, pair)! - extra / 0.4 / 1e9) < 1e-9);
  // At a peak of extra / 0.1 s the ceiling is the base step plus 0.1 s.
  assert.ok(Math.abs(ceilingTps(B8, pair, extra / 0.1 / 1e9) - 1 / (1 / 6 + 0.1)) < 1e-12);
  // Negative controls: a deep step no slower than the base has no rate; an endless peak leaves the base step.
  assert.equal(attentionRate(B8, { base: pair.base, deep: { context: 32768, tps: 6 } }), null);
  assert.ok(Math.abs(ceilingTps(B8, pair, 1e300) - 6) < 1e-9);
});

test('attention ceiling: each deep row pairs with its own scheme at the shallowest context and native best at both', () => {
  const kv = [
    { scheme: 'q2k', context: 1024, tps: 6 },
    { scheme: 'f16', context: 1024, tps: 6.2 },
    { scheme: 'q2k', context: 32768, tps: 1.7 },
    { scheme: 'q8_0', context: 32768, tps: 1.5 },
  ];
  const nat = [
    { context: 1024, tps: 7.2 },
    { context: 1024, tps: 5.9 },
    { context: 32768, tps: 1.6 },
    { context: 32768, tps: 0.5 },
  ];
  const rows = ceilingRows(kv, nat, (s, c) => (s === 'q2k' && c === 32768 ? 2 : null));
  // q8_0 has no shallower row: no ceiling for it.
  assert.deepEqual(rows, [
    {
      scheme: 'q2k',
      kvpack: { base: { context: 1024, tps: 6 }, deep: { context: 32768, tps: 1.7 } },
      native: { base: { context: 1024, tps: 7.2 }, deep: { context: 32768, tps: 1.6 } },
      target: 2,
    },
  ]);
  assert.equal(ceilingRows(kv, [], () => null)[0]!.native, null);
  const peaks = { threads: 2, w128: 55, w256: 110 };
  const [head, line] = ceilingLines(B8, peaks, rows);
  assert.match(head!, /128-bit FMA 55\.0 G multiply-adds\/s/);
  // 2 x 1.6 = 3.2 tok/s against a ceiling of 1 / (1/6 + 8.32 / 55) = 3.14: above it; from native's 1K step
  // (7.2 tok/s) 1 / (1/7.2 + 8.32 / 55) = 3.45, which the target is 93% of.
  assert.match(
    line!,
    /q2k at 32768: .* = 3\.14 tok\/s at most .* the target 2x it is 3\.20 tok\/s, above that ceiling; with native's 1024-position step as the rest of the step the ceiling is 3\.45 and the target 93% of that ceiling/,
  );
  // Negative control: a faster peak puts the same target under the ceiling.
  assert.match(ceilingLines(B8, { ...peaks, w128: 200 }, rows)[1]!, /the target 2x it is 3\.20 tok\/s, \d+% of that ceiling/);
});

test(
  'attention ceiling: the multiply-add probe builds into the cache dir and reports a plausible peak',
  {
    skip: spawnSync('cc', ['--version']).status !== 0 && 'no C compiler',
  },
  () =>
    inFreshCacheDir(async (dir) => {
      const { fmaProbe, fmaPeakNow } = await import('../bench/compute-peak.js');
      const p = fmaProbe();
      assert.ok('bin' in p && p.bin.startsWith(dir), JSON.stringify(p));
      const w128 = fmaPeakNow(128, 1)!;
      const w256 = fmaPeakNow(256, 1)!;
      // One core does 0.5-500 G f32 multiply-adds a second; outside that the loop did not run what it counts.
      assert.ok(w128 > 0.5 && w128 < 500, `${w128} G/s`);
      assert.ok(w256 > 0.5 * w128 && w256 < 1000, `${w256} G/s against ${w128}`);
    }),
);
