// What a Hugging Face architecture needs to become the engine's GGUF-shaped model: its GGUF name, the
// tensor names per layer, the row permutation and norm shift llama.cpp's converter applies, the metadata.
import type { ModelTensor } from '../../gguf/model.js';
import type { GgufValue } from '../../gguf/values.js';
import type { HfConfig } from '../config.js';

/** One per-layer tensor: its name after `model.layers.N.` and after `blk.N.`. */
export interface LayerTensor {
  readonly hf: string;
  readonly gguf: string;
  /** Absent in some checkpoints of the architecture (llama's attention biases). */
  readonly optional?: boolean;
}

export interface HfArch {
  /** GGUF `general.architecture` (a row of src/model/arch/registry.ts). */
  readonly gguf: string;
  /** HF `architectures[0]` classes read as this architecture. */
  readonly classes: readonly string[];
  /** Per-layer tensors in the order written to GGUF. */
  readonly layerTensors: readonly LayerTensor[];
  /**
   * llama.cpp's `llama` arch rotates neighbouring pairs (RoPE NORM): its converter permutes the q/k rows of
   * each head from HF's rotate-half order. NEOX architectures (qwen2, qwen3, gemma3) keep HF's order.
   */
  readonly permuteQk: boolean;
  /** Added to every norm weight: gemma computes x * (1 + w), GGUF stores 1 + w. */
  readonly normShift: number;
  /** The config key naming the FFN activation, and the values that mean the engine's one. */
  readonly activation: { readonly key: string; readonly values: readonly string[]; readonly fallback: string };
  /** Drop embedding rows past the tokenizer's vocabulary (gemma3 pads its embedding, llama.cpp trims it). */
  readonly embedToVocab: boolean;
  /** The `<arch>.*` metadata keys from the config, as llama.cpp's convert_hf_to_gguf writes them. */
  metadata(c: HfConfig): [string, GgufValue][];
  /** Tensors the converter computes from the config (llama 3's rope_freqs.weight). */
  extraTensors?(c: HfConfig): [string, ModelTensor][];
}
