// A model directory as named byte sources: the seam the Hugging Face loader reads through. Node opens a
// directory path (dir-files.ts); a page opens a folder the user picked or a directory a server lists
// (web-files.ts); tests hold files in memory (memoryFiles). Names are plain file names directly in the
// directory: the loader never asks for a path.
import { FileFormatError } from '../errors.js';
import { memorySource, type ByteSource } from '../gguf/source.js';

export interface ModelFiles {
  /** The directory's own name (a model's general.name). */
  readonly name: string;
  /** Where the directory is, for messages: a path, a picked folder, a URL. */
  readonly location: string;
  /** The files directly in the directory, by plain name. */
  readonly names: readonly string[];
  /** Where one file is, for messages. */
  locate(file: string): string;
  /** The file's bytes; a FileFormatError when `names` does not hold it. */
  open(file: string): ByteSource;
}

/** Text files the loader reads beside the safetensors (config, tokenizer, chat template, shard index). */
export const HF_TEXT_FILES: readonly string[] = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'model.safetensors.index.json',
];

/** True for a file the loader may read: what a server offers of a model directory, and nothing else. */
export function isHfModelFile(name: string): boolean {
  return HF_TEXT_FILES.includes(name) || (name.endsWith('.safetensors') && !name.startsWith('.'));
}

/** True when the directory holds `file`. */
export const hasFile = (files: ModelFiles, file: string): boolean => files.names.includes(file);

/** The error `open` throws for a file the directory does not hold. */
export function noSuchFile(files: ModelFiles, file: string): FileFormatError {
  return new FileFormatError('hf', `${files.locate(file)}: missing`);
}

/** A small file (config, tokenizer) as UTF-8 text. */
export function readText(files: ModelFiles, file: string): string {
  const src = files.open(file);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(src.read(0, src.size));
  } catch (e) {
    if (e instanceof TypeError) throw new FileFormatError('hf', `${files.locate(file)}: not valid UTF-8`);
    throw e;
  }
}

/** A JSON file, parsed; a parse failure is one line naming the file. */
export function readJson(files: ModelFiles, file: string): unknown {
  const text = readText(files, file);
  try {
    return JSON.parse(text);
  } catch (e) {
    // JSON.parse's message is one line naming the position.
    throw new FileFormatError('hf', `${files.locate(file)}: not valid JSON (${(e as Error).message.split('\n')[0]})`);
  }
}

/** A directory held in memory (tests; a page holding ArrayBuffers): file name -> bytes. */
export function memoryFiles(files: Readonly<Record<string, Uint8Array>>, name = '<memory>'): ModelFiles {
  const dir: ModelFiles = {
    name,
    location: name,
    names: Object.keys(files),
    locate: (file) => `${name}/${file}`,
    open(file) {
      const bytes = Object.hasOwn(files, file) ? files[file] : undefined;
      if (!bytes) throw noSuchFile(dir, file);
      return memorySource(bytes, dir.locate(file));
    },
  };
  return dir;
}
