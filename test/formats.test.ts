// Properties every registered format must have (formats added later are covered automatically):
// layout/size audit, error within the format's own errorBound, zeros stay zeros, decode of any bytes never
// throws, typed errors on bad input, and odd lengths padded the way codec.ts documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formats } from '../src/formats/registry.js';
import { encode, decode, type Shape } from '../src/formats/codec.js';
import { bitsPerValue, blocksFor, bytesFor, type KvFormat } from '../src/formats/format.js';
import { NonFiniteError, ShapeError } from '../src/errors.js';
import { Prng } from '../src/numeric/prng.js';

/** Named test blocks of exactly `n` values: random at several scales plus the edge blocks. */
function blocksFor_(n: number, seed: number): [string, Float32Array][] {
  const rng = new Prng(seed);
  const out: [string, Float32Array][] = [];
  for (const scale of [1, 0.01, 100]) out.push([`normal x${scale}`, rng.normals(n, scale)]);
  for (let r = 0; r < 5; r++) out.push([`normal #${r}`, rng.normals(n, 0.5 + rng.next() * 4)]);
  out.push(['tiny (fp16 scales lose precision)', rng.normals(n, 1e-7)]);
  out.push(['constant', new Float32Array(n).fill(0.75)]);
  out.push(['constant negative', new Float32Array(n).fill(-2.5)]);
  const outlier = rng.normals(n, 0.1);
  outlier[n >> 1] = 50;
  out.push(['one outlier', outlier]);
  // Full magnitude of both signs: the clamped end of signed grids (q4_0's +8 does not exist).
  out.push(['+-max, positive first', Float32Array.from({ length: n }, (_, i) => (i % 2 ? -60000 : 60000))]);
  out.push(['+-max, negative first', Float32Array.from({ length: n }, (_, i) => (i % 2 ? 60000 : -60000))]);
  // Half-integers: exact rounding ties for grids whose step comes out as 1.
  out.push(['ties', Float32Array.from({ length: n }, (_, i) => (i % 16) - 8 + 0.5)]);
  out.push(['ramp', Float32Array.from({ length: n }, (_, i) => -1 + (2 * i) / Math.max(1, n - 1))]);
  return out;
}

function roundTripBlock(f: KvFormat, src: Float32Array): Float32Array {
  const bytes = new Uint8Array(f.blockBytes);
  f.encodeBlock(src, 0, bytes, 0);
  const out = new Float32Array(f.blockValues);
  f.decodeBlock(bytes, 0, out, 0);
  return out;
}

/** The codec's documented layout, rebuilt from whole zero-padded blocks: [rows, cols] -> decoded values. */
function paddedReference(f: KvFormat, values: Float32Array, [rows, cols]: Shape): Float32Array {
  const B = f.blockValues;
  const out = new Float32Array(rows * cols);
  const block = new Float32Array(B);
  if (f.axis === 'token') {
    for (let r = 0; r < rows; r++) {
      for (let ib = 0; ib < blocksFor(f, cols); ib++) {
        block.fill(0);
        for (let j = 0; j < B && ib * B + j < cols; j++) block[j] = values[r * cols + ib * B + j]!;
        const dec = roundTripBlock(f, block);
        for (let j = 0; j < B && ib * B + j < cols; j++) out[r * cols + ib * B + j] = dec[j]!;
      }
    }
  } else {
    for (let g = 0; g < blocksFor(f, rows); g++) {
      for (let c = 0; c < cols; c++) {
        block.fill(0);
        for (let t = 0; t < B && g * B + t < rows; t++) block[t] = values[(g * B + t) * cols + c]!;
        const dec = roundTripBlock(f, block);
        for (let t = 0; t < B && g * B + t < rows; t++) out[(g * B + t) * cols + c] = dec[t]!;
      }
    }
  }
  return out;
}

function sameFloats(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]) || (x === 0 && b[i] === 0));
}

test('the registry is not empty and ids are lowercase', () => {
  assert.ok(formats.size >= 9);
  for (const id of formats.keys()) assert.match(id, /^[a-z0-9_]+$/);
});

for (const f of formats.values()) {
  const B = f.blockValues;

  test(`${f.id}: layout sums to blockBytes; bits/value agree with bytesFor`, () => {
    assert.ok(Number.isInteger(B) && B > 0 && Number.isInteger(f.blockBytes) && f.blockBytes > 0);
    assert.equal(
      f.layout.reduce((s, x) => s + x.bytes, 0),
      f.blockBytes,
    );
    assert.equal(new Set(f.layout.map((x) => x.name)).size, f.layout.length, 'field names unique');
    for (const x of f.layout) assert.ok(x.bytes > 0 && x.what.length > 0, `field ${x.name}`);
    // Whole blocks: bytes = values * bits / 8 along either axis.
    for (const [tokens, dims] of [
      [B, B],
      [2 * B, 3 * B],
      [4 * B, 1 * B],
    ] as const) {
      assert.equal(bytesFor(f, tokens, dims), (tokens * dims * bitsPerValue(f)) / 8, `[${tokens}, ${dims}]`);
    }
    // A partial block costs a whole one.
    if (f.axis === 'token') assert.equal(bytesFor(f, 3, 1), 3 * f.blockBytes);
    else assert.equal(bytesFor(f, 1, 5), 5 * f.blockBytes);
  });

  test(`${f.id}: zeros stay zeros`, () => {
    const out = roundTripBlock(f, new Float32Array(B));
    assert.ok(
      out.every((x) => x === 0),
      `decoded ${[...out].slice(0, 8)}`,
    );
    const shape: Shape = f.axis === 'token' ? [3, 2 * B + 1] : [2 * B + 1, 3];
    const n = shape[0] * shape[1];
    assert.ok(decode(f.id, encode(f.id, new Float32Array(n), shape), n, shape).every((x) => x === 0));
  });

  const bound = f.errorBound?.bind(f);
  if (bound) {
    test(`${f.id}: encode -> decode error within errorBound on random and edge blocks`, () => {
      for (const [name, src] of blocksFor_(B, 1234 + B)) {
        const limit = bound(src, 0);
        assert.ok(limit >= 0, `${name}: bound ${limit}`);
        const out = roundTripBlock(f, src);
        for (let j = 0; j < B; j++) {
          const err = Math.abs(out[j]! - src[j]!);
          assert.ok(err <= limit, `${name}[${j}]: ${src[j]} -> ${out[j]}, error ${err} > bound ${limit}`);
        }
      }
    });
  }

  test(`${f.id}: decoding random bytes never throws`, () => {
    const rng = new Prng(99);
    const shape: Shape = f.axis === 'token' ? [4, 3 * B] : [3 * B, 4];
    const n = shape[0] * shape[1];
    for (let r = 0; r < 50; r++) {
      const bytes = Uint8Array.from({ length: bytesFor(f, shape[0], shape[1]) }, () => rng.int(256));
      assert.equal(decode(f.id, bytes, n, shape).length, n);
    }
  });

  test(`${f.id}: NaN/Inf input throws NonFiniteError at the right index`, () => {
    for (const bad of [NaN, Infinity, -Infinity]) {
      const x = new Prng(5).normals(2 * B);
      x[B + 1 < x.length ? B + 1 : 0] = bad;
      assert.throws(
        () => encode(f.id, x),
        (e: unknown) => e instanceof NonFiniteError && e.index === (B + 1 < x.length ? B + 1 : 0),
      );
    }
  });

  test(`${f.id}: wrong lengths and shapes throw ShapeError`, () => {
    const shape: Shape = f.axis === 'token' ? [2, B] : [B, 2];
    const bytes = encode(f.id, new Prng(6).normals(2 * B), shape);
    assert.throws(() => decode(f.id, bytes.subarray(1), 2 * B, shape), ShapeError);
    assert.throws(() => decode(f.id, new Uint8Array(bytes.length + 1), 2 * B, shape), ShapeError);
    assert.throws(() => decode(f.id, bytes, 2 * B + 1, shape), ShapeError);
    assert.throws(() => encode(f.id, new Float32Array(5), [2, 3]), ShapeError);
    assert.throws(() => encode(f.id, new Float32Array(4), [-2, -2]), ShapeError);
  });

  test(`${f.id}: odd lengths round-trip through zero padding (${f.axis} axis)`, () => {
    const rng = new Prng(7);
    for (const len of [1, 31, 33, 127]) {
      // token axis: rows of `len` values; channel axis: `len` tokens of 3 channels.
      const shape: Shape = f.axis === 'token' ? [2, len] : [len, 3];
      const x = rng.normals(shape[0] * shape[1]);
      const bytes = encode(f.id, x, shape);
      assert.equal(bytes.length, bytesFor(f, shape[0], shape[1]));
      const y = decode(f.id, bytes, x.length, shape);
      assert.ok(sameFloats(y, paddedReference(f, x, shape)), `length ${len}: differs from whole padded blocks`);
      if (bound && f.axis === 'token') {
        // Each block's own bound (with its zero padding) covers its values.
        const block = new Float32Array(B);
        for (let r = 0; r < shape[0]; r++) {
          for (let ib = 0; ib < blocksFor(f, len); ib++) {
            block.fill(0);
            const m = Math.min(B, len - ib * B);
            block.set(x.subarray(r * len + ib * B, r * len + ib * B + m));
            const limit = bound(block, 0);
            for (let j = 0; j < m; j++) {
              const i = r * len + ib * B + j;
              assert.ok(Math.abs(y[i]! - x[i]!) <= limit, `length ${len}, value ${i}`);
            }
          }
        }
      }
    }
  });
}
