// Which build of the kernel module this process runs: the relaxed-SIMD one (int8 dot instructions, the
// relaxed prefill tiles) or the baseline-SIMD one. Chromium has relaxed SIMD on; Node 20's V8 11.3 has it
// behind --experimental-wasm-relaxed-simd, and its baseline compiler (Liftoff) computes
// i32x4.relaxed_dot_i8x16_i7x16_add_s wrongly (measured: 2000 of 2000 dots off), so on Node both flags are
// set here, before the first compile: that flag and --no-liftoff (every wasm function compiled optimized).
// The relaxed build is used only when it validates and its load-time self-test reproduces exact integer
// dots; otherwise the baseline build runs and the reason is what kernelBuild() reports.
import { hasRelaxedSimd } from './features.js';

export interface KernelBuild {
  readonly module: WebAssembly.Module;
  /** True when the relaxed-SIMD build was chosen. */
  readonly relaxed: boolean;
  /** One line for `kvpack info` and bench headers: what runs and why. */
  readonly note: string;
}

/** V8 flags that enable relaxed SIMD on Node 20, set once before the first compile (process-wide: workers share them). */
export const NODE_RELAXED_FLAGS = ['--experimental-wasm-relaxed-simd', '--no-liftoff'] as const;

type V8 = { setFlagsFromString(flag: string): void };

/** Sets NODE_RELAXED_FLAGS when this is Node and its V8 lacks relaxed SIMD; returns whether it now validates. */
function enableOnNode(): { ok: boolean; flags: boolean } {
  if (hasRelaxedSimd()) return { ok: true, flags: false };
  const p = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const v8 = p?.getBuiltinModule?.('node:v8') as V8 | undefined;
  if (!v8) return { ok: false, flags: false };
  for (const f of NODE_RELAXED_FLAGS) v8.setFlagsFromString(f);
  return { ok: hasRelaxedSimd(), flags: true };
}

/** Vectors the self-test checks: i8 a and 0..127 b with the extremes (-128 x 127 pairs: -32512, no saturation). */
const CHECK_VECTORS = 32;

/**
 * Runs relaxedDotCheck (assembly/matmul/relaxed_tile.ts) of a compiled relaxed build over a scratch memory against
 * exact integer dots accumulated as the kernels do; returns the first mismatch or '' when every lane agrees.
 */
export function relaxedSelfTest(module: WebAssembly.Module): string {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const exports = new WebAssembly.Instance(module, { env: { memory } }).exports as Record<string, (...a: number[]) => void>;
  const n = CHECK_VECTORS;
  const A = 1024,
    B = A + 16 * n,
    OUT = B + 16 * n;
  const a = new Int8Array(memory.buffer, A, 16 * n);
  const b = new Uint8Array(memory.buffer, B, 16 * n);
  // Deterministic values: three vectors of extremes (pairs -32512, 32258, -32258), the rest an LCG over the full ranges.
  let s = 12345;
  for (let i = 0; i < 16 * n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const v = i < 16 ? 0 : i < 32 ? 1 : i < 48 ? 2 : 3;
    a[i] = v === 0 ? -128 : v === 1 ? 127 : v === 2 ? -127 : (s >>> 8) & 0xff;
    b[i] = v === 3 ? (s >>> 20) & 0x7f : 127;
  }
  exports['relaxedDotCheck']!(A, B, n, OUT);
  const i16 = new Int16Array(memory.buffer, OUT, 24 * n);
  const i32 = new Int32Array(memory.buffer, OUT, 12 * n);
  const s16 = new Int16Array(8);
  const s32 = new Int32Array(4).fill(n);
  for (let v = 0; v < n; v++) {
    for (let l = 0; l < 8; l++) {
      const j = 16 * v + 2 * l;
      s16[l] = s16[l]! + a[j]! * b[j]! + a[j + 1]! * b[j + 1]!;
      if (i16[24 * v + l] !== s16[l]) return `i16x8.relaxed_dot_i8x16_i7x16_s, running sum lane ${l} after vector ${v}: ${i16[24 * v + l]}, not ${s16[l]}`;
    }
    for (let l = 0; l < 4; l++) {
      let one = 0;
      for (let k = 0; k < 4; k++) one += a[16 * v + 4 * l + k]! * b[16 * v + 4 * l + k]!;
      s32[l] = s32[l]! + one;
      const got = i32[12 * v + 4 + l],
        alone = i32[12 * v + 8 + l];
      if (got !== s32[l]) return `i32x4.relaxed_dot_i8x16_i7x16_add_s, running sum lane ${l} after vector ${v}: ${got}, not ${s32[l]}`;
      if (alone !== one) return `i32x4.relaxed_dot_i8x16_i7x16_add_s lane ${l} of vector ${v} alone: ${alone}, not ${one}`;
    }
  }
  return '';
}

/** Whether KVPACK_RELAXED_SIMD=0 asks for the baseline build (A/B runs, the fallback's own tests). */
function disabledByEnv(): boolean {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.['KVPACK_RELAXED_SIMD'] === '0';
}

/** Compiles the build this process runs (once, by wasm.ts): the relaxed one when usable, else the baseline. */
export function compileKernels(baseline: Uint8Array<ArrayBuffer>, relaxed: Uint8Array<ArrayBuffer> | null): KernelBuild {
  const base = (why: string): KernelBuild => ({ module: new WebAssembly.Module(baseline), relaxed: false, note: `baseline SIMD (${why})` });
  if (!relaxed?.length) return base('no relaxed-SIMD build');
  if (disabledByEnv()) return base('relaxed SIMD disabled by KVPACK_RELAXED_SIMD=0');
  const on = enableOnNode();
  if (!on.ok || !WebAssembly.validate(relaxed)) return base('this engine has no relaxed SIMD');
  let module: WebAssembly.Module;
  try {
    module = new WebAssembly.Module(relaxed);
  } catch (e) {
    return base(`the relaxed build did not compile: ${(e as Error).message}`);
  }
  let bad: string;
  try {
    bad = relaxedSelfTest(module);
  } catch (e) {
    bad = `it threw: ${(e as Error).message}`;
  }
  if (bad) return base(`relaxed SIMD failed its self-test: ${bad}`);
  return { module, relaxed: true, note: `relaxed SIMD (self-test passed${on.flags ? `; V8 flags ${NODE_RELAXED_FLAGS.join(' ')}` : ''})` };
}
