import test from 'node:test';
import assert from 'node:assert/strict';
import { kvBytes, regionCounts } from './accounting.js';
import { schemePolicy, schemes } from './schemes.js';
import { memoryTable, patternWindows } from '../cli/memory.js';
import { withSlidingWindows } from './swa.js';
import { planLayers } from './policy.js';
import { ArgumentError } from '../errors.js';

const GiB = 1024 ** 3;
const seed000 = { ctx: 262144, layers: 12, kvHeads: 2, headDim: 256 };

test("seed 000's memory table: f16 2048 B/cell 6.00 GiB, q4_0 576 / 1.69, q2k 448 / 1.31", () => {
  const want: Record<string, [number, string]> = { f16: [2048, '6.00'], q4_0: [576, '1.69'], q2k: [448, '1.31'] };
  for (const [name, [cell, gib]] of Object.entries(want)) {
    const b = kvBytes({ ...seed000, policy: schemePolicy(name, { window: 0, sinks: 0 }) });
    assert.equal(b.total / (seed000.ctx * seed000.layers), cell, name);
    assert.equal((b.total / GiB).toFixed(2), gib, name);
    assert.equal(b.staging + b.window + b.sinks + b.anchors, 0);
  }
  const rows = memoryTable({ ...seed000, kvWindow: 0, sinks: 0, windowMode: 'overlay' });
  assert.equal(rows.length, schemes.size);
  assert.equal(rows.find((r) => r.scheme === 'q2k')!.bytesPerCell, 448);
});

test('a window of 128 + 4 sinks adds exactly their f16 copies (overlay)', () => {
  const base = kvBytes({ ...seed000, policy: schemePolicy('q2k', { window: 0, sinks: 0 }) });
  const over = kvBytes({ ...seed000, policy: schemePolicy('q2k', { window: 128, sinks: 4 }) });
  assert.equal(over.bulk, base.bulk);
  assert.equal(over.window + over.sinks, (128 + 4) * 2048 * 12);
  // Residual: the same positions leave the bulk instead.
  const res = kvBytes({ ...seed000, policy: schemePolicy('q4_0', { window: 128, sinks: 4, windowMode: 'residual' }) });
  assert.equal(res.bulk, (seed000.ctx - 132) * 576 * 12);
});

test('partial channel groups are counted as float32 staging; partial token blocks as padded blocks', () => {
  const b = kvBytes({ ctx: 45, layers: 1, kvHeads: 1, headDim: 40, policy: { k: 'q2c_0', v: 'q4_0', window: 0, sinks: 0 } });
  // K: one full group of 32 tokens x 40 channels x 10 B, 13 tokens staged as f32.
  assert.equal(b.bulk, 40 * 10 + 45 * 2 * 18);
  assert.equal(b.staging, 13 * 40 * 4);
  assert.equal(b.bitsPerElement, (b.total * 8) / (45 * 40 * 2));
});

test('anchors are counted from the prompt on their layers only', () => {
  const policy = schemePolicy('sign', { window: 0, sinks: 0, anchors: { count: 8, layers: [0], precision: 'int8' } });
  const b = kvBytes({ ctx: 100, layers: 2, kvHeads: 1, headDim: 64, policy, prompt: 95 });
  assert.equal(b.anchors, 5 * 2 * 34 * 2); // 5 generated so far, q8_0 rows of 2 blocks, K and V
  assert.equal(b.perLayer[1]!.anchors, 0);
  const plans = planLayers(policy, 2, 1000);
  assert.deepEqual(regionCounts(plans[0]!, 100, 95), { sinks: 0, anchors: 5, window: 0, stream: 100 });
});

test('bad accounting input is a typed error', () => {
  assert.throws(() => kvBytes({ ...seed000, headDim: 0, policy: schemePolicy('f16') }), ArgumentError);
  assert.throws(() => kvBytes({ ...seed000, ctx: 1.5, policy: schemePolicy('f16') }), ArgumentError);
});

test('a gemma3-4B-shaped cache at 32K: the 29 sliding-window layers hold 1024 positions, the 5 global ones all', () => {
  const shape = { ctx: 32768, layers: 34, kvHeads: 4, headDim: 256 };
  const windows = patternWindows(34, 1024, 6);
  assert.equal(windows.filter((w) => w === 0).length, 5);
  const cell = 4 * 256 * 2 * 2; // f16 K+V of one position in one layer
  const policy = schemePolicy('f16', { window: 0, sinks: 0 });
  const full = kvBytes({ ...shape, policy });
  const swa = kvBytes({ ...shape, policy: withSlidingWindows(policy, windows) });
  assert.equal(full.total, 34 * 32768 * cell); // 4.25 GiB
  // After a decode step at 32767 the next query reads from 31744, a chunk boundary: exactly the window is held.
  assert.equal(swa.total, (5 * 32768 + 29 * 1024) * cell); // 0.74 GiB
  // Mid-prefill (a 256-token batch from 32512) the local layers still hold that batch's whole reach.
  const mid = kvBytes({ ...shape, policy: withSlidingWindows(policy, windows), batchStart: 32512 });
  assert.equal(mid.total, (5 * 32768 + 29 * (32768 - 31488)) * cell);
  const rows = memoryTable({ ...shape, kvWindow: 0, sinks: 0, windowMode: 'overlay', slidingWindow: 1024, swaPattern: 6 });
  const f16 = rows.find((r) => r.scheme === 'f16')!;
  assert.deepEqual([f16.totalBytes, f16.keepAllBytes, f16.bytesPerCell], [swa.total, full.total, cell]);
});
