// Tiny random models of each architecture, written with our GGUF writer and read back with our reader,
// so the engine's tests run every architecture's forward pass without any downloaded weights.
import { encode } from '../../src/formats/codec.js';
import { modelFromGguf, type LoadedModel } from '../../src/gguf/model.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { GGML } from '../../src/gguf/types.js';
import { gv, type GgufValue } from '../../src/gguf/values.js';
import { encodeGguf, type GgufTensorInput } from '../../src/gguf/writer.js';
import { Prng } from '../../src/numeric/prng.js';
import { archTensors } from '../fixtures/arch-tensors.js';

export interface TinyOptions {
  /** Store 2-D weights as q8_0 (exercises the quantized matmul path). */
  quant?: 'q8_0';
  seed?: number;
}

export const TINY = { vocab: 96, dim: 64, ff: 96, layers: 7, heads: 4, kvHeads: 2, ctx: 256 } as const;
/** gemma3 and qwen3 use a head size other than dim / heads, as the real models do. */
const HEAD_DIM: Record<string, number> = { llama: 16, qwen2: 16, qwen3: 32, gemma3: 32 };
export const TINY_SLIDING_WINDOW = 5;

export function tinyModel(arch: 'llama' | 'qwen2' | 'qwen3' | 'gemma3', o: TinyOptions = {}): LoadedModel {
  const rng = new Prng(o.seed ?? 7);
  const { vocab, dim, ff, layers, heads, kvHeads, ctx } = TINY;
  const hd = HEAD_DIM[arch]!;
  const md: [string, GgufValue][] = [
    ['general.architecture', gv.str(arch)],
    [`${arch}.context_length`, gv.u32(ctx)],
    [`${arch}.embedding_length`, gv.u32(dim)],
    [`${arch}.block_count`, gv.u32(layers)],
    [`${arch}.feed_forward_length`, gv.u32(ff)],
    [`${arch}.attention.head_count`, gv.u32(heads)],
    [`${arch}.attention.head_count_kv`, gv.u32(kvHeads)],
    [`${arch}.attention.key_length`, gv.u32(hd)],
    [`${arch}.attention.value_length`, gv.u32(hd)],
    [`${arch}.attention.layer_norm_rms_epsilon`, gv.f32(1e-6)],
    [`${arch}.rope.freq_base`, gv.f32(arch === 'gemma3' ? 1e6 : 10000)],
    [`${arch}.vocab_size`, gv.u32(vocab)],
  ];
  if (arch === 'gemma3') md.push([`${arch}.attention.sliding_window`, gv.u32(TINY_SLIDING_WINDOW)]);
  if (arch === 'llama') md.push([`${arch}.rope.scaling.type`, gv.str('linear')], [`${arch}.rope.scaling.factor`, gv.f32(2)]);

  const tensors: GgufTensorInput[] = [];
  const f32 = (name: string, dims: number[], values: Float32Array) =>
    tensors.push({ name, type: GGML.F32, dims, data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) });
  const matrix = (name: string, rows: number, cols: number) => {
    const w = rng.normals(rows * cols, 1 / Math.sqrt(cols));
    if (o.quant !== 'q8_0') return f32(name, [cols, rows], w);
    tensors.push({ name, type: GGML.Q8_0, dims: [cols, rows], data: encode('q8_0', w, [rows, cols]) });
  };
  const norm = (name: string, n: number) =>
    f32(
      name,
      [n],
      Float32Array.from({ length: n }, () => 1 + 0.1 * rng.normal()),
    );
  const bias = (name: string, n: number) => f32(name, [n], rng.normals(n, 0.1));

  archTensors(arch, { vocab, dim, ff, layers, heads, kvHeads, hd }, { matrix, norm, bias });
  return modelFromGguf(parseGguf(encodeGguf({ metadata: md, tensors }), `tiny-${arch}.gguf`));
}
