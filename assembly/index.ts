// Kernel module entry: every export is a pointer-only kernel over the imported (shared) memory.
// Naming: <format>_<op> with op in encode | decode | scores | accum; shared f32 kernels by name.
export { dotRows, axpyRows, softmaxRows, scaleF32, sumF32 } from './common';
export { tileBytes } from './tile';
export { f32_encode, f32_scores, f32_accum, f16_encode, f16_decode, f16_scores, f16_accum, bf16_encode, bf16_decode, bf16_scores, bf16_accum } from './float';
export { q8_0_encode, q8_0_decode, q8_0_scores, q8_0_accum } from './q8_0';
export { q4_0_encode, q4_0_decode, q4_0_scores, q4_0_accum } from './q4_0';
export { q2c_0_encode, q2c_0_decode, q2c_0_scores, q2c_0_accum } from './q2c_0';
