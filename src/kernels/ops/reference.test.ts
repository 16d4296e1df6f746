import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addRows, Rope, rmsNorm } from './reference.js';
import { ShapeError } from '../../errors.js';
import { NO_ROPE_SCALING } from '../../model/hparams.js';

const D = 8;

function rotate(style: 'norm' | 'neox', pos: number, x: Float32Array, scaling = NO_ROPE_SCALING): Float32Array {
  const r = new Rope(D, style, 10000, scaling);
  const y = x.slice();
  r.apply(y, 1, 1, D, r.table([pos]));
  return y;
}

test('norm RoPE rotates neighbour pairs; neox rotates halves; both are the same rotation on permuted dims', () => {
  const x = Float32Array.from({ length: D }, (_, i) => i + 1);
  // neox pairs (i, i + D/2); permuting to interleaved order must give norm's result.
  const perm = [0, 4, 1, 5, 2, 6, 3, 7];
  const xi = Float32Array.from(perm, (p) => x[p]!);
  const a = rotate('norm', 5, xi);
  const b = rotate('neox', 5, x);
  perm.forEach((p, i) => assert.ok(Math.abs(a[i]! - b[p]!) < 1e-5));
  // Pair 0 turns by exactly pos radians.
  assert.ok(Math.abs(a[0]! - (xi[0]! * Math.cos(5) - xi[1]! * Math.sin(5))) < 1e-5);
});

test('RoPE keeps norms; position 0 is the identity; linear scaling divides positions', () => {
  const x = Float32Array.from({ length: D }, (_, i) => Math.sin(i) + 0.5);
  const n = (v: Float32Array) => Math.hypot(...v);
  assert.ok(Math.abs(n(rotate('neox', 77, x)) - n(x)) < 1e-5);
  assert.deepEqual(rotate('norm', 0, x), x);
  const lin = { ...NO_ROPE_SCALING, type: 'linear' as const, factor: 4 };
  const a = rotate('norm', 12, x, lin);
  const b = rotate('norm', 3, x);
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]!) < 1e-5));
});

test('YaRN leaves high-frequency pairs unscaled and interpolates low-frequency ones', () => {
  const yarn = { type: 'yarn' as const, factor: 4, origCtx: 64, attnFactor: 1, betaFast: 32, betaSlow: 1 };
  const r = new Rope(64, 'neox', 10000, yarn);
  const plain = new Rope(64, 'neox', 10000, NO_ROPE_SCALING);
  const m = 1 + 0.1 * Math.log(4);
  const a = r.table([100]);
  const b = plain.table([100]);
  // Pair 0 (fastest) extrapolates: same angle, magnitude scaled by mscale.
  assert.ok(Math.abs(a.cos[0]! - b.cos[0]! * m) < 1e-5);
  // The slowest pair interpolates: angle / factor.
  const slow = plain.table([25]);
  assert.ok(Math.abs(a.cos[31]! - slow.cos[31]! * m) < 1e-5);
});

test('rmsNorm: unit RMS times the weight', () => {
  const x = Float32Array.from([3, 4, 0, 0]);
  const out = new Float32Array(4);
  rmsNorm(out, x, Float32Array.from([1, 2, 1, 1]), 1, 4, 0);
  assert.deepEqual(
    [...out].map((v) => +v.toFixed(5)),
    [1.2, 3.2, 0, 0],
  );
});

test('RoPE tables written into given arrays equal fresh ones; short arrays are ShapeErrors', () => {
  const r = new Rope(6, 'neox', 500000, NO_ROPE_SCALING);
  const fresh = r.table([3, 9]);
  const out = { cos: new Float32Array(6), sin: new Float32Array(6) };
  assert.equal(r.table([3, 9], out), out);
  assert.deepEqual(out, fresh);
  assert.throws(() => r.table([3, 9, 10], out), ShapeError);
});

test('addRows adds the bias to every row; a bias of the wrong length is a ShapeError', () => {
  const x = Float32Array.from([1, 2, 3, 4, 5, 6]);
  addRows(x, Float32Array.from([10, 20, 30]), 2, 3);
  assert.deepEqual([...x], [11, 22, 33, 14, 25, 36]);
  assert.throws(() => addRows(x, new Float32Array(2), 2, 3), ShapeError);
});
