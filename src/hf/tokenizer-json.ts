// STUB: the tokenizer.ggml.* metadata of a Hugging Face directory (tokenizer.json, tokenizer_config.json,
// generation_config.json). The real implementation lands from the hf-tokenizer branch; until then the
// loader gets no vocabulary, so models load and run on token ids only.
import type { GgufValue } from '../gguf/values.js';

export function hfTokenizerMetadata(dir: string): [string, GgufValue][] {
  void dir;
  return [];
}
