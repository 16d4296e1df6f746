import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OPS, hasKernel, lookupKernel, registerKernel } from './registry.js';
import { KvpackError, UnknownFormatError } from '../../errors.js';
import { wasmKernels } from '../runtime/wasm.js';
import { encodeRows } from './encode.js';
import { formats, getFormat } from '../../formats/registry.js';
import { rowBytes } from '../../formats/format.js';
import { Prng } from '../../numeric/prng.js';

test('registry: a second registration of the same key throws', () => {
  const fn = () => {};
  registerKernel('f32', 'decode', 'ref', fn);
  assert.throws(
    () => registerKernel('f32', 'decode', 'ref', fn),
    (e: unknown) => e instanceof KvpackError && e.code === 'DUPLICATE_KERNEL',
  );
});

test('registry: every format and op has a wasm kernel when the module loads; ref stays reachable; unknown formats throw', (t) => {
  assert.throws(() => lookupKernel('no_such_format', 'scores'), UnknownFormatError);
  for (const id of formats.keys()) for (const op of OPS) assert.equal(lookupKernel(id, op, 'ref').impl, 'ref', `${id}:${op}:ref`);
  if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build (every lookup is then ref)');
  const missing = [...formats.keys()].flatMap((id) => OPS.filter((op) => !hasKernel(id, op, 'wasm')).map((op) => `${id}:${op}`));
  assert.deepEqual(missing, [], 'formats whose ops would fall back to the reference');
});

test('registry: q4_0 is served by wasm when the module loads', (t) => {
  if (!wasmKernels()) return t.skip('wasm kernels unavailable in this build');
  assert.equal(lookupKernel('q4_0', 'scores').impl, 'wasm');
});

test('encodeRows: arena destination (wasm) and JS destination (ref) give the same bytes', (t) => {
  const k = wasmKernels();
  if (!k) return t.skip('wasm kernels unavailable in this build');
  const f = getFormat('q4_0');
  const D = 64;
  const tokens = 9;
  const src = new Prng(5).normals(tokens * D);
  const js = new Uint8Array(tokens * rowBytes(f, D));
  encodeRows(f, src, 0, D, tokens, D, js, 0);
  const off = k.arena.alloc(js.length);
  encodeRows(f, src, 0, D, tokens, D, k.arena.u8(), off);
  assert.deepEqual(k.arena.u8().slice(off, off + js.length), js);
  k.arena.free(off);
});
