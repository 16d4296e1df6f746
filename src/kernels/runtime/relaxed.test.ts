// The choice of kernel build: the relaxed one loads where its self-test passes, the self-test catches the
// wrong dots of Node 20's baseline compiler (negative control: the same build compiled with Liftoff on),
// and every failure path falls back to the baseline build with the reason in kernelBuild().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { compileKernels, relaxedSelfTest } from './relaxed.js';
import { WASM_BASE64, WASM_RELAXED_BASE64 } from './wasm-binary.js';
import { kernelBuild, wasmFailure } from './wasm.js';

const bytes = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));
const skip = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : !WASM_RELAXED_BASE64 ? 'no relaxed build' : false;

test('relaxed: the kernels load the relaxed build on this engine, and its self-test passes', { skip }, () => {
  const b = kernelBuild()!;
  assert.equal(b.relaxed, true, b.note);
  assert.match(b.note, /^relaxed SIMD \(self-test passed/);
  assert.equal(relaxedSelfTest(new WebAssembly.Module(bytes(WASM_RELAXED_BASE64))), '');
});

test('relaxed: a build whose self-test cannot pass (the baseline build in its place) falls back, saying why', { skip }, () => {
  const b = compileKernels(bytes(WASM_BASE64), bytes(WASM_BASE64));
  assert.equal(b.relaxed, false);
  assert.match(b.note, /^baseline SIMD \(relaxed SIMD failed its self-test: it threw/);
  assert.equal(compileKernels(bytes(WASM_BASE64), null).note, 'baseline SIMD (no relaxed-SIMD build)');
});

const child = (env: Record<string, string>, flags: string[], code: string) =>
  spawnSync(process.execPath, [...flags, '--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

const v8113 = process.versions.v8.startsWith('11.3.');
test("relaxed: the self-test fails the relaxed build under Node 20's baseline compiler (negative control)", {
  skip: skip || (v8113 ? false : "the baseline compiler's wrong dots are V8 11.3's (Node 20)"),
}, () => {
  // Only the flag, Liftoff left on: V8 11.3 computes the relaxed dots wrongly there.
  const code = `import { relaxedSelfTest } from '${here('./relaxed.js')}'; import { WASM_RELAXED_BASE64 } from '${here('./wasm-binary.js')}';
    console.log(relaxedSelfTest(new WebAssembly.Module(Buffer.from(WASM_RELAXED_BASE64, 'base64'))) || 'passed');`;
  const r = child({}, ['--experimental-wasm-relaxed-simd'], code);
  assert.match(r.stdout, /relaxed_dot_i8x16_i7x16_add_s lane \d of vector \d+ alone: -?\d+, not -?\d+/, r.stderr);
});

test('relaxed: KVPACK_RELAXED_SIMD=0 runs the baseline build and its tiles, and says so', { skip }, () => {
  const code = `import { kernelBuild } from '${here('./wasm.js')}'; import { matmulKernelFor } from '${here('../matmul/plan.js')}';
    import { Weight } from '${here('../../model/forward-weights.js')}'; import { GGML } from '${here('../../gguf/types.js')}';
    const w = new Weight('w', { type: GGML.Q4_0, dims: [64, 4], data: new Uint8Array(4 * 2 * 18) });
    console.log(JSON.stringify({ ...kernelBuild(), kernel: matmulKernelFor(w.packedWeight, 8, 'q8') }));`;
  const off = JSON.parse(child({ KVPACK_RELAXED_SIMD: '0' }, [], code).stdout) as { relaxed: boolean; note: string; kernel: string };
  assert.deepEqual(off, { relaxed: false, note: 'baseline SIMD (relaxed SIMD disabled by KVPACK_RELAXED_SIMD=0)', kernel: 'matmulQ8Tiled' });
  const on = JSON.parse(child({}, [], code).stdout) as { relaxed: boolean; kernel: string };
  assert.equal(on.relaxed, true);
  assert.equal(on.kernel, 'matmulQ8Relaxed');
});
