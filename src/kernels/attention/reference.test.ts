import test from 'node:test';
import assert from 'node:assert/strict';
import { attendReference } from './reference.js';
import { attendNaive } from './naive.js';
import { encode } from '../../formats/codec.js';
import { f32 } from '../../formats/f32.js';
import { getFormat } from '../../formats/registry.js';
import { readStored } from './dequantize.js';
import { Prng } from '../../numeric/prng.js';
import type { MixedView } from './view.js';
import { ShapeError } from '../../errors.js';

/** A view whose whole K and V live in one packed run each (rows [T, H*D] -> per-head layout). */
function packedView(format: string, k: Float32Array, v: Float32Array, T: number, H: number, D: number): MixedView {
  const f = getFormat(format);
  const perHead = (x: Float32Array) => {
    const parts: Uint8Array[] = [];
    for (let h = 0; h < H; h++) {
      const rows = new Float32Array(T * D);
      for (let t = 0; t < T; t++) rows.set(x.subarray((t * H + h) * D, (t * H + h + 1) * D), t * D);
      parts.push(encode(format, rows, [T, D]));
    }
    const bytes = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    parts.forEach((p, i) => bytes.set(p, i * p.length));
    return { format: f, bytes, offset: 0, headStride: parts[0]!.length, first: 0 };
  };
  return { headDim: D, kvHeads: H, length: T, segments: [{ start: 0, count: T, k: perHead(k), v: perHead(v), region: 'bulk' }] };
}

const T = 70;
const H = 2;
const D = 32;
const rng = new Prng(1);
const k = rng.normals(T * H * D);
const v = rng.normals(T * H * D);

test('f32 view: decode and causal prefill equal naive float64 attention', () => {
  const view = packedView('f32', k, v, T, H, D);
  for (const heads of [2, 8]) {
    const positions = [0, 1, 31, 32, 69];
    const q = rng.normals(positions.length * heads * D);
    const out = new Float32Array(q.length);
    attendReference({ view, q, heads, out, positions });
    const want = attendNaive(q, k, v, heads, H, D, positions);
    for (let i = 0; i < out.length; i++) assert.ok(Math.abs(out[i]! - want[i]!) < 1e-6);
  }
  assert.equal(f32.blockBytes, 4);
});

test('packed q4_0 / q2c_0 views equal dequantize-then-float attention', () => {
  for (const fmt of ['q4_0', 'q2c_0', 'nf4', 'int2c_g32']) {
    const view = packedView(fmt, k, v, T, H, D);
    const q = rng.normals(4 * D);
    const out = new Float32Array(q.length);
    attendReference({ view, q, heads: 4, out });
    const want = attendNaive(q, readStored(view, 'k'), readStored(view, 'v'), 4, H, D);
    for (let i = 0; i < out.length; i++) assert.ok(Math.abs(out[i]! - want[i]!) < 1e-5, fmt);
  }
});

test('sliding window and softcap restrict and bend the scores as defined', () => {
  const view = packedView('f32', k, v, T, H, D);
  const q = rng.normals(2 * D);
  const out = new Float32Array(q.length);
  attendReference({ view, q, heads: 2, out, slidingWindow: 10 });
  // Only the last 10 positions: equal to attention over a 10-position cache.
  const tail = packedView('f32', k.subarray((T - 10) * H * D), v.subarray((T - 10) * H * D), 10, H, D);
  const want = new Float32Array(q.length);
  attendReference({ view: tail, q, heads: 2, out: want });
  for (let i = 0; i < out.length; i++) assert.ok(Math.abs(out[i]! - want[i]!) < 1e-6);
  const capped = new Float32Array(q.length);
  attendReference({ view, q: q.map((x) => x * 50), heads: 2, out: capped, softcap: 1 });
  const plain = new Float32Array(q.length);
  attendReference({ view, q: q.map((x) => x * 50), heads: 2, out: plain });
  assert.notDeepEqual(capped, plain);
});

test('bad shapes are typed errors', () => {
  const view = packedView('f32', k, v, T, H, D);
  assert.throws(() => attendReference({ view, q: new Float32Array(3 * D), heads: 3, out: new Float32Array(3 * D) }), ShapeError);
  assert.throws(() => attendReference({ view, q: new Float32Array(2 * D), heads: 2, out: new Float32Array(D) }), ShapeError);
  const gap: MixedView = { ...view, segments: [{ ...view.segments[0]!, start: 1 }] };
  assert.throws(() => attendReference({ view: gap, q: new Float32Array(2 * D), heads: 2, out: new Float32Array(2 * D) }), ShapeError);
});
