// The tokenizer of a Hugging Face model directory as GGUF tokenizer metadata: reads tokenizer.json and,
// when present, tokenizer_config.json, special_tokens_map.json, config.json, generation_config.json and
// chat_template.jinja, then converts them (tokenizer-convert.ts, which the browser uses directly).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileFormatError } from '../errors.js';
import type { GgufValue } from '../gguf/values.js';
import { hfTokenizerMetadataFromJson, type HfTokenizerFiles } from './tokenizer-convert.js';

export { hfTokenizerMetadataFromJson, type HfTokenizerFiles } from './tokenizer-convert.js';

/** tokenizer.ggml.* entries (and tokenizer.hf.pipeline) for the tokenizer in `dir`. */
export function hfTokenizerMetadata(dir: string): [string, GgufValue][] {
  const path = join(dir, 'tokenizer.json');
  if (!existsSync(path)) throw new FileFormatError(dir, 'no tokenizer.json in this directory');
  const files: HfTokenizerFiles = {
    tokenizer: readJson(path),
    ...optional(dir, 'tokenizer_config.json', 'tokenizerConfig'),
    ...optional(dir, 'special_tokens_map.json', 'specialTokensMap'),
    ...optional(dir, 'config.json', 'config'),
    ...optional(dir, 'generation_config.json', 'generationConfig'),
  };
  const jinja = join(dir, 'chat_template.jinja');
  return hfTokenizerMetadataFromJson(existsSync(jinja) ? { ...files, chatTemplate: readFileSync(jinja, 'utf8') } : files);
}

function optional(dir: string, name: string, field: keyof HfTokenizerFiles): Partial<HfTokenizerFiles> {
  const path = join(dir, name);
  if (!existsSync(path)) return {};
  const value = readJson(path);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FileFormatError(path, 'not a JSON object');
  return { [field]: value };
}

function readJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new FileFormatError(path, `cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    // JSON.parse's message is one line naming the position.
    throw new FileFormatError(path, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
  }
}
