// Kernel module entry: every export is a pointer-only kernel over the imported (shared) memory.
// Naming: <format>_<op> with op in encode | decode | scores | accum; shared f32 kernels by name.
export { dotRows, axpyRows, softmaxRows, softmaxChunk, quantizeRows, scaleF32, sumF32, heapBase } from './shared/common';
export { tileBytes } from './attention/tile';
export { f32_encode, f32_decode, f32_scores, f32_accum, f16_encode, f16_decode, f16_scores, f16_accum, bf16_encode, bf16_decode, bf16_scores, bf16_accum } from './attention/float';
export { q8_0_encode, q8_0_decode, q8_0_scores, q8_0_scores_i, q8_0_accum } from './attention/q8_0';
export { q4_0_encode, q4_0_decode, q4_0_scores_i } from './attention/q4_0';
export { q4_0_accum } from './attention/q4_0_accum';
export { q4_0_scores } from './attention/q4_0_scores';
export { q2c_0_encode, q2c_0_decode, q2c_0_scores, q2c_0_accum } from './attention/q2c_0';
export { q4_1_decode, q4_1_scores, q4_1_accum, q5_0_decode, q5_0_scores, q5_0_accum, q5_1_decode, q5_1_scores, q5_1_accum, iq4_nl_decode, iq4_nl_scores, iq4_nl_accum, nf4_decode, nf4_scores, nf4_accum, int4_g32_decode, int4_g32_scores, int4_g32_accum, int4_g64_decode, int4_g64_scores, int4_g64_accum, int4_g128_decode, int4_g128_scores, int4_g128_accum, int2_g32_decode, int2_g32_scores, int2_g32_accum, int2_g64_decode, int2_g64_scores, int2_g64_accum, int2_g128_decode, int2_g128_scores, int2_g128_accum, sign_g32_decode, sign_g32_scores, sign_g32_accum, sign_g8_decode, sign_g8_scores, sign_g8_accum, sign_g4_decode, sign_g4_scores, sign_g4_accum } from './attention/tiled';
export { int4c_g32_decode, int4c_g32_scores, int4c_g32_accum, int2c_g32_decode, int2c_g32_scores, int2c_g32_accum } from './attention/kivi';
export { packActQ8, matmulQ8Tiled } from './matmul/tile_q8';
export { matmulTileScratchBytes } from './matmul/tile_strip';
export { matmulF32Tiled } from './matmul/tile_f32';
export { halfNonFinite } from './matmul/decode';
export { matmulVec, packActVec, packActVecN, repackTypeOf, repackWeight, vecOrder, vecRelaxedType, vecScalesFinite } from './matmul/vec';
export { weightTypeFacts } from './matmul/types';
export { matmulRun, matmulPart, matmulArm, matmulCancel, matmulJobBytes, matmulJobParts, matmulJobDone, K_VEC, K_Q8_TILED, K_F32_TILED, K_Q8_RELAXED, K_TOUCH } from './matmul/run';
export { matmulQ8Relaxed, narrowActQ8, relaxedTileType, relaxedDotCheck } from './matmul/relaxed_tile';
export { int4_g32_encode, int4_g64_encode, int4_g128_encode, int2_g32_encode, int2_g64_encode, int2_g128_encode, int4c_g32_encode, int2c_g32_encode } from './encode/affine';
export { q4_1_encode, q5_0_encode, q5_1_encode, iq4_nl_encode } from './encode/ggml';
export { nf4_encode, sign_g32_encode, sign_g8_encode, sign_g4_encode } from './encode/codebook';
export { tern_g32_encode, tern_g8_encode, tern_g4_encode } from './encode/tern';
export { int2s_g8_encode, int2s_g4_encode } from './encode/int2s';
export { tern_g32_decode, tern_g32_scores, tern_g32_accum, tern_g8_decode, tern_g8_scores, tern_g8_accum, tern_g4_decode, tern_g4_scores, tern_g4_accum } from './attention/tiled';
export { int2s_g8_decode, int2s_g8_scores, int2s_g8_accum, int2s_g4_decode, int2s_g4_scores, int2s_g4_accum } from './attention/tiled';
export { opRmsNorm, opRope, opSiluMul, opGeluMul, opAdd, opAddRows, opSoftcap, opScale, opExp, opFirstNonFinite } from './ops/ops';
export { q4_0_accum_w16, q8_0_accum_w16 } from './attention/accum_w16';
