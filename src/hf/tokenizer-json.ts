// The tokenizer of a Hugging Face model directory as GGUF tokenizer metadata: reads tokenizer.json and,
// when present, tokenizer_config.json, special_tokens_map.json, config.json, generation_config.json and
// chat_template.jinja through the directory's ModelFiles, then converts them (tokenizer-convert.ts).
import { FileFormatError } from '../errors.js';
import type { GgufValue } from '../gguf/values.js';
import { asModelFiles } from './dir-files.js';
import { hasFile, readJson, readText, type ModelFiles } from './model-files.js';
import { hfTokenizerMetadataFromJson, type HfTokenizerFiles } from './tokenizer-convert.js';

export { hfTokenizerMetadataFromJson, type HfTokenizerFiles } from './tokenizer-convert.js';

export const TOKENIZER_FILE = 'tokenizer.json';

/** tokenizer.ggml.* entries (and tokenizer.hf.pipeline) for the tokenizer in `dir` (a path in Node). */
export function hfTokenizerMetadata(dir: string | ModelFiles): [string, GgufValue][] {
  const d = asModelFiles(dir);
  if (!hasFile(d, TOKENIZER_FILE)) throw new FileFormatError(d.location, `no ${TOKENIZER_FILE} in this directory`);
  const files: HfTokenizerFiles = {
    tokenizer: readJson(d, TOKENIZER_FILE),
    ...optional(d, 'tokenizer_config.json', 'tokenizerConfig'),
    ...optional(d, 'special_tokens_map.json', 'specialTokensMap'),
    ...optional(d, 'config.json', 'config'),
    ...optional(d, 'generation_config.json', 'generationConfig'),
  };
  const jinja = 'chat_template.jinja';
  return hfTokenizerMetadataFromJson(hasFile(d, jinja) ? { ...files, chatTemplate: readText(d, jinja) } : files);
}

function optional(d: ModelFiles, name: string, field: keyof HfTokenizerFiles): Partial<HfTokenizerFiles> {
  if (!hasFile(d, name)) return {};
  const value = readJson(d, name);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FileFormatError(d.locate(name), 'not a JSON object');
  return { [field]: value };
}
