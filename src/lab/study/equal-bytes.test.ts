// Equal bytes: the filled 2-bit arms meet q2k's real bytes at a whole number of groups, and the check that
// holds an arm to the budget fails for an arm below it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kvBytes } from '../../cache/accounting.js';
import { fillWindow, studyLiveArms } from './equal-bytes.js';
import { equalBytesRows, parseLiveCache } from '../protocols/live-cache-core.js';
import { loadProtocol } from '../protocol.js';
import type { ArmRecord } from '../protocols/model-runs.js';

const shape = { layers: 6, kvHeads: 2, headDim: 64 };
const bytesOf = (a: Record<string, unknown>, n: number) =>
  kvBytes({ ctx: n, ...shape, policy: { k: a.k as string, v: a.v as string, window: (a.window as number) ?? 0, sinks: 0 } }).total;

test('equal bytes: K2V2 and the KIVI split filled with an f16 window cost exactly what q2k costs at 256 positions', () => {
  const arms = studyLiveArms(shape, 256);
  const budget = bytesOf(arms.find((a) => a.name === 'q2k')!, 256);
  const eq = arms.filter((a) => a.equalBytes === true);
  assert.deepEqual(
    eq.map((a) => a.name),
    ['q2k', 'k4-v2c', 'kivi2+w8', 'q2+w16'],
  );
  for (const a of eq) assert.equal(bytesOf(a, 256), budget, a.name as string);
  // The natives are below the budget, so the fill is not a no-op.
  assert.ok(bytesOf(arms.find((a) => a.name === 'q2')!, 256) < budget);
  assert.equal(fillWindow({ k: 'q2c_0', v: 'q4_0' }, { k: 'q2c_0', v: 'q4_0' }, shape, 256), 0);
});

test('equal bytes: the check fails for an arm off the budget', () => {
  const base = JSON.parse(Buffer.from(loadProtocol('live-cache').bytes).toString('utf8')) as Record<string, unknown>;
  const arms = studyLiveArms(shape, 256).map((a) => (a.name === 'q2' ? { ...a, equalBytes: true } : a));
  const spec = parseLiveCache({ ...base, arms, budgetArm: 'q2k', equalBytesTolerance: 0.005 });
  const records = spec.arms.map(
    (a): ArmRecord =>
      ({
        arm: { name: a.name, policy: { k: a.k, v: a.v, window: a.window, sinks: 0 } },
        outcomes: [{ bytes: bytesOf(a as unknown as Record<string, unknown>, 256), positions: 256 }],
      }) as unknown as ArmRecord,
  );
  const rows = equalBytesRows(spec, records, shape.layers);
  assert.deepEqual(
    rows.filter((r) => !r.ok).map((r) => r.arm),
    ['q2'],
  );
  assert.ok(rows.filter((r) => r.arm !== 'q2').every((r) => r.ok));
});
