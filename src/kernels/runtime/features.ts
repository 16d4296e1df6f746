// Which wasm proposals this engine offers beyond the baseline SIMD the kernels are built for, by validating
// a minimal module (no instantiation). Relaxed SIMD (f32x4 fused multiply-add, i8 dots): what bench:browser
// and the page report, and the first check before relaxed.ts compiles and self-tests the relaxed build.

/** `(func (result v128) v128.const 0 x3, <op>)`: a one-function module around a 3-operand SIMD op. */
function simdModule(op: readonly number[]): Uint8Array<ArrayBuffer> {
  const zero = [0xfd, 0x0c, ...new Array<number>(16).fill(0)];
  const body = [0x00, ...zero, ...zero, ...zero, ...op, 0x0b];
  return Uint8Array.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    0x01,
    0x05,
    0x01,
    0x60,
    0x00,
    0x01,
    0x7b, // type: () -> v128
    0x03,
    0x02,
    0x01,
    0x00, // one function of type 0
    0x0a,
    body.length + 2,
    0x01,
    body.length,
    ...body,
  ]);
}

/** v128.bitselect (0xfd 0x52): baseline SIMD, the control that the probe module itself is well formed. */
export const SIMD_PROBE = simdModule([0xfd, 0x52]);
/** f32x4.relaxed_madd (0xfd 0x105). */
export const RELAXED_SIMD_PROBE = simdModule([0xfd, 0x85, 0x02]);

/** True when this engine validates relaxed-SIMD instructions. */
export function hasRelaxedSimd(): boolean {
  return WebAssembly.validate(RELAXED_SIMD_PROBE);
}
