// config.json of a Hugging Face model, with typed getters whose errors name the file and the key. A
// multimodal config (Gemma3ForConditionalGeneration) keeps the language model's fields in `text_config`.
import { FileFormatError } from '../errors.js';
import { hasFile, readJson, type ModelFiles } from './model-files.js';

export const CONFIG_FILE = 'config.json';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export class HfConfig {
  /** `architectures[0]` of the top-level config (e.g. LlamaForCausalLM). */
  readonly architecture: string;

  private constructor(
    readonly path: string,
    /** The language model's fields: `text_config` when present, else the whole file. */
    private readonly fields: Json,
    architecture: string,
  ) {
    this.architecture = architecture;
  }

  static read(files: ModelFiles): HfConfig {
    const path = files.locate(CONFIG_FILE);
    if (!hasFile(files, CONFIG_FILE)) throw new FileFormatError('hf', `${path}: missing`);
    const json = readJson(files, CONFIG_FILE);
    if (!isObject(json)) throw new FileFormatError('hf', `${path}: not a JSON object`);
    const archs = json['architectures'];
    if (!Array.isArray(archs) || typeof archs[0] !== 'string') throw new FileFormatError('hf', `${path}: 'architectures' must list the model class`);
    const text = json['text_config'];
    return new HfConfig(path, isObject(text) ? text : json, archs[0]);
  }

  /** From fields already parsed (tests). */
  static of(fields: Json, architecture: string, path = '<config>'): HfConfig {
    return new HfConfig(path, fields, architecture);
  }

  private fail(key: string, message: string): FileFormatError {
    return new FileFormatError('hf', `${this.path}: '${key}' ${message}`);
  }

  /** True when the key is present and not null (HF writes absent options as null). */
  has(key: string): boolean {
    return this.fields[key] !== undefined && this.fields[key] !== null;
  }

  /** The value under `key` when `ok` accepts it; `fallback` when absent; else an error saying what was expected. */
  private value<T>(key: string, fallback: T | undefined, ok: (v: unknown) => boolean, what: string): T {
    if (!this.has(key)) {
      if (fallback !== undefined) return fallback;
      throw this.fail(key, 'is missing');
    }
    const v = this.fields[key];
    if (!ok(v)) throw this.fail(key, `must be ${what}, found ${JSON.stringify(v)}`);
    return v as T;
  }

  /** A positive integer (sizes, counts). */
  int(key: string, fallback?: number): number {
    return this.value(key, fallback, (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1, 'a positive integer');
  }

  /** A finite number. */
  num(key: string, fallback?: number): number {
    return this.value(key, fallback, (v) => typeof v === 'number' && Number.isFinite(v), 'a finite number');
  }

  str(key: string, fallback?: string): string {
    return this.value(key, fallback, (v) => typeof v === 'string', 'a string');
  }

  bool(key: string, fallback: boolean): boolean {
    return this.value(key, fallback, (v) => typeof v === 'boolean', 'true or false');
  }

  /** A nested object (rope_scaling), or undefined when absent or null. */
  obj(key: string): HfConfig | undefined {
    if (!this.has(key)) return undefined;
    const v = this.fields[key];
    if (!isObject(v)) throw this.fail(key, `must be an object, found ${JSON.stringify(v)}`);
    return new HfConfig(`${this.path}: ${key}`, v, this.architecture);
  }

  /** An array of strings (layer_types), or undefined when absent. */
  strings(key: string): string[] | undefined {
    if (!this.has(key)) return undefined;
    const v = this.fields[key];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw this.fail(key, 'must be an array of strings');
    return v as string[];
  }

  /** An error about this config's value of `key` (unsupported settings). */
  unsupported(key: string, message: string): FileFormatError {
    return this.fail(key, message);
  }
}
