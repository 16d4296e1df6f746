import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForwardBuffers, KEEP_BYTES, type BufferSizes } from './forward-buffers.js';
import { ArgumentError } from '../errors.js';
import { inWasm, wasmFailure, wasmKernels } from '../kernels/runtime/wasm.js';

const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

function sizes(n: number): BufferSizes {
  return { x: 7 * n, xb: 7 * n, q: 12 * n, k: 4 * n, v: 4 * n, att: 12 * n, gate: 19 * n, up: 19 * n, logits: 33, cosG: 3 * n, sinG: 3 * n, cosL: 0, sinL: 0 };
}

test('buffers are exact-length, disjoint arena views; a released region is reused by the next call', { skip }, () => {
  const k = wasmKernels()!;
  const a = ForwardBuffers.acquire(sizes(5));
  const s = sizes(5);
  const spans = (['x', 'xb', 'q', 'k', 'v', 'att', 'gate', 'up', 'logits', 'cosG', 'sinG'] as const).map((name) => {
    const v = a.get(name);
    assert.equal(v.length, s[name], name);
    assert.ok(inWasm(k, v), name);
    return [v.byteOffset, v.byteOffset + v.byteLength] as const;
  });
  spans.forEach(([s0, e0], i) => spans.forEach(([s1, e1], j) => assert.ok(i === j || e0 <= s1 || e1 <= s0, `buffers ${i} and ${j} overlap`)));
  const off = a.x.byteOffset;
  a.release();
  // A smaller call (decode after prefill) takes the same region.
  const b = ForwardBuffers.acquire(sizes(1));
  assert.equal(b.x.byteOffset, off);
  // A call while the region is held (re-entrant forward) gets its own.
  const c = ForwardBuffers.acquire(sizes(1));
  assert.notEqual(c.x.byteOffset, off);
  c.release();
  b.release();
  assert.throws(() => b.get('x'), ArgumentError);
});

test('views are re-made after the arena grows and keep their contents', { skip }, () => {
  const k = wasmKernels()!;
  const a = ForwardBuffers.acquire(sizes(3));
  a.x.set([1, 2, 3]);
  const before = a.x;
  // Force a grow: more than the arena's current size.
  const big = k.arena.alloc(k.arena.memory.buffer.byteLength);
  try {
    const after = a.x;
    assert.notEqual(after.buffer, before.buffer);
    assert.equal(after.buffer, k.arena.memory.buffer);
    assert.deepEqual([...after.subarray(0, 3)], [1, 2, 3]);
  } finally {
    k.arena.free(big);
    a.release();
  }
});

test('a region over KEEP_BYTES is freed on release, not kept', { skip }, () => {
  const k = wasmKernels()!;
  // Drain the spare region first, so the accounting below sees only the big one.
  ForwardBuffers.acquire(sizes(1)).release();
  const held = k.arena.allocated;
  const big = ForwardBuffers.acquire({ ...sizes(1), logits: KEEP_BYTES / 4 + 16 });
  assert.ok(k.arena.allocated > held);
  big.release();
  assert.ok(k.arena.allocated <= held, `${k.arena.allocated} B still allocated, ${held} before`);
});
