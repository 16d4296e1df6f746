// Limits the GGUF reader enforces before it loops or allocates. Each says what it guards against;
// all of them sit far above any real model (the largest vocab arrays are ~262k strings).

/** "GGUF" as a little-endian u32; anything else is not a GGUF file. */
export const GGUF_MAGIC = 0x46554747;

/** v1 used 32-bit counts and lengths; v2 and v3 share the 64-bit layout (v3 only added big-endian files). */
export const GGUF_VERSIONS: readonly number[] = [2, 3];

/** Default data alignment when general.alignment is absent (gguf.md: GGUF_DEFAULT_ALIGNMENT). */
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** Guards the padding arithmetic against a corrupt general.alignment; writers use 32 or at most a page. */
export const MAX_ALIGNMENT = 1 << 16;

/** Guards the tensor-info loop and table allocation against a corrupt count; real models have < 10k tensors. */
export const MAX_TENSORS = 1 << 20;

/** Guards the metadata loop against a corrupt count; real files have < 100 keys. */
export const MAX_KV = 1 << 20;

/** Guards a single string allocation (a hostile length of 2^63); chat templates are < 1 MiB. */
export const MAX_STRING_BYTES = 64 << 20;

/** Guards array allocation; the largest real arrays (vocab, merges) hold about a million items. */
export const MAX_ARRAY_LENGTH = 1 << 26;

/** ggml tensors have at most 4 dimensions (GGML_MAX_DIMS); more is corruption. */
export const MAX_DIMS = 4;

/** One dimension beyond 2^31-1 exceeds every real model and JS typed-array indexing. */
export const MAX_DIM = 2 ** 31 - 1;

/** ggml names are char[GGML_MAX_NAME = 64] including the NUL, so llama.cpp refuses longer ones. */
export const MAX_TENSOR_NAME_BYTES = 63;

/** Bytes read per positioned read while parsing the header: big enough for a vocab, small enough to not matter. */
export const HEADER_CHUNK_BYTES = 1 << 20;
