// A metadata-only GGUF v3 file for tests: enough for llama.cpp to load a vocabulary (vocab_only) and
// tokenize, so our tokenizer can be compared with its tokenizer on the same vocab.

const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const T = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 } as const;
// llama.cpp reads these hparams before the vocab even when only the vocab is wanted.
const LLAMA_HPARAMS: [string, number][] = [
  ['llama.context_length', 128],
  ['llama.embedding_length', 8],
  ['llama.block_count', 1],
  ['llama.feed_forward_length', 16],
  ['llama.attention.head_count', 2],
  ['llama.rope.dimension_count', 4],
  ['llama.attention.layer_norm_rms_epsilon', Math.fround(1e-5)],
];

/**
 * Serializes `meta` (values: string, u32 or f32 number, boolean, string[], Int32Array, Float32Array) under
 * general.architecture = llama, with no tensors.
 */
export function vocabGguf(meta: ReadonlyMap<string, unknown>): Uint8Array {
  const parts: Uint8Array[] = [];
  const enc = new TextEncoder();
  const u32 = (x: number) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, x, true); parts.push(b); };
  const u64 = (x: number) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(x), true); parts.push(b); };
  const str = (s: string) => { const b = enc.encode(s); u64(b.length); parts.push(b); };
  const typed = (a: Int32Array | Float32Array) => parts.push(new Uint8Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength)));

  const entries: [string, unknown][] = [['general.architecture', 'llama'], ...LLAMA_HPARAMS, ...meta];
  u32(GGUF_MAGIC);
  u32(3);
  u64(0); // tensors
  u64(entries.length);
  for (const [key, v] of entries) {
    str(key);
    if (typeof v === 'string') (u32(T.string), str(v));
    else if (typeof v === 'number' && Number.isInteger(v)) (u32(T.u32), u32(v));
    else if (typeof v === 'number') (u32(T.f32), typed(Float32Array.of(v)));
    else if (typeof v === 'boolean') (u32(T.bool), parts.push(Uint8Array.of(v ? 1 : 0)));
    else if (v instanceof Int32Array) (u32(T.array), u32(T.i32), u64(v.length), typed(v));
    else if (v instanceof Float32Array) (u32(T.array), u32(T.f32), u64(v.length), typed(v));
    else if (Array.isArray(v)) {
      u32(T.array), u32(T.string), u64(v.length);
      for (const s of v) str(s as string);
    } else throw new TypeError(`vocabGguf: cannot write '${key}'`);
  }
  const size = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(Math.ceil(size / 32) * 32); // data section starts aligned (empty here)
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
}

/** llama.cpp's vocab as node-llama-cpp exposes it (the calls the tokenizer cross-checks use). */
export type LlamaVocabModel = {
  tokenize(t: string, special?: boolean): number[];
  detokenize(ids: readonly number[], special?: boolean): string;
  dispose(): Promise<void>;
};

/** A loader of vocab-only GGUF files through node-llama-cpp, or why it cannot load (a skip reason). */
export async function llamaCppVocabLoader(): Promise<((path: string) => Promise<LlamaVocabModel>) | string> {
  try {
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.disabled });
    return async (modelPath) => (await llama.loadModel({ modelPath, vocabOnly: true })) as unknown as LlamaVocabModel;
  } catch (e) {
    return `node-llama-cpp unavailable: ${(e as Error).message}`;
  }
}
