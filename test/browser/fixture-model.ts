// The model the browser tests load: the shared TinyStories-656K GGUF when ../shared/models has it, else a
// tiny random llama with a trained SentencePiece vocabulary (so the page can tokenize a prompt) written to
// a temporary directory.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyLlama } from '../fixtures/tiny.js';
import { gv, type GgufValue } from '../../src/gguf/values.js';
import { writeGguf } from '../../src/gguf/writer.js';
import { trainedSpmMetadata } from '../fixtures/tokenizer.js';
import { fromRoot } from '../paths.js';

export interface TestModel {
  /** Directory `kvpack web --models` serves. */
  dir: string;
  /** File name in it. */
  name: string;
  /** What it is, for the test log. */
  label: string;
  /** True when `dir` is a temporary directory the caller removes. */
  temporary: boolean;
}

const SHARED = fromRoot('..', 'shared', 'models');
const SHARED_MODEL = 'tinystories-656k.gguf';

/** `shared`: where to look for the shared model (tests of the fallback pass a directory without it). */
export function testModel(shared = SHARED): TestModel {
  if (existsSync(join(shared, SHARED_MODEL))) return { dir: shared, name: SHARED_MODEL, label: `../shared/models/${SHARED_MODEL}`, temporary: false };
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-web-'));
  const name = 'tiny-spm.gguf';
  const vocab = trainedSpmMetadata();
  const tokens = vocab.get('tokenizer.ggml.tokens') as string[];
  // dim 256: its output matmul is big enough (>= PARALLEL_MIN_MACS) that threaded runs hand rows to a worker.
  // ctx 1024: the page's long-prompt test feeds it ~700 tokens (the page holds a model to its own context).
  const model = tinyLlama({ vocab: tokens.length, ctx: 1024, dim: 256, ff: 512 });
  const tok: [string, GgufValue][] = [...vocab].map(([k, v]) => [k, toValue(v)]);
  const keep = [...model.metadata].filter(([k]) => !k.startsWith('tokenizer.'));
  writeGguf(join(dir, name), { ...model, metadata: [...keep, ...tok] });
  return { dir, name, label: `a tiny random llama with a trained vocabulary (${join(dir, name)}; ../shared/models absent)`, temporary: true };
}

/** The fixture's plain JS metadata values as GGUF values. */
function toValue(v: unknown): GgufValue {
  if (typeof v === 'string') return gv.str(v);
  if (typeof v === 'boolean') return gv.bool(v);
  if (typeof v === 'number') return Number.isInteger(v) ? gv.u32(v) : gv.f32(v);
  if (v instanceof Float32Array) return gv.f32s(v);
  if (v instanceof Int32Array) return gv.i32s(v);
  if (Array.isArray(v)) return gv.strings(v as string[]);
  throw new Error(`fixture metadata value ${String(v)} has no GGUF type here`);
}
