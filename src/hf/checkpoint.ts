// The safetensors files of a Hugging Face directory: `model.safetensors`, or the shards named by
// `model.safetensors.index.json` ({weight_map: {tensor: "model-00001-of-00002.safetensors"}}), merged into
// one tensor map. The index is checked against the shards: every listed tensor is in its shard, no tensor
// is in two shards, and shard names are plain file names inside the directory.
import { FileFormatError } from '../errors.js';
import { hasFile, readJson, type ModelFiles } from './model-files.js';
import { readSafetensorsFrom, type SafetensorsTensor } from './safetensors.js';

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

export interface Checkpoint {
  /** The safetensors files read (plain names in the directory), in order. */
  readonly files: readonly string[];
  /** Every tensor of every file, under its Hugging Face name. */
  readonly tensors: ReadonlyMap<string, SafetensorsTensor>;
}

/** Opens the directory's weights (headers only); the single file wins over an index, as in transformers. */
export function openCheckpoint(dir: ModelFiles): Checkpoint {
  if (hasFile(dir, SINGLE_FILE)) return { files: [SINGLE_FILE], tensors: readSafetensorsFrom(dir.open(SINGLE_FILE)).tensors };
  if (!hasFile(dir, INDEX_FILE)) {
    throw new FileFormatError('hf', `${dir.location}: no ${SINGLE_FILE} or ${INDEX_FILE} (only safetensors checkpoints are read)`);
  }
  const index = dir.locate(INDEX_FILE);
  const weightMap = readWeightMap(dir);
  const files = [...new Set(weightMap.values())];
  const tensors = new Map<string, SafetensorsTensor>();
  const owner = new Map<string, string>();
  for (const f of files) {
    if (!hasFile(dir, f)) throw new FileFormatError('hf', `${index}: shard '${f}' does not exist`);
    for (const [name, t] of readSafetensorsFrom(dir.open(f)).tensors) {
      const prev = owner.get(name);
      if (prev) throw new FileFormatError('hf', `${dir.location}: tensor '${name}' is in both '${prev}' and '${f}'`);
      owner.set(name, f);
      tensors.set(name, t);
    }
  }
  for (const [name, f] of weightMap) {
    if (owner.get(name) !== f)
      throw new FileFormatError('hf', `${index}: tensor '${name}' is listed in '${f}' but is ${owner.has(name) ? `in '${owner.get(name)}'` : 'in no shard'}`);
  }
  return { files, tensors };
}

/** The index's weight_map, each value a plain shard file name. */
function readWeightMap(dir: ModelFiles): Map<string, string> {
  const path = dir.locate(INDEX_FILE);
  const json = readJson(dir, INDEX_FILE);
  const wm = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof wm !== 'object' || wm === null || Array.isArray(wm)) throw new FileFormatError('hf', `${path}: no weight_map object`);
  const out = new Map<string, string>();
  for (const [name, f] of Object.entries(wm)) {
    // A shard outside the directory ('../x', '/etc/x') is never followed.
    if (typeof f !== 'string' || /[/\\]/.test(f) || f === '..' || f === '.' || !f.endsWith('.safetensors')) {
      throw new FileFormatError('hf', `${path}: weight_map['${name}'] = ${JSON.stringify(f)} is not a .safetensors file name in the directory`);
    }
    out.set(name, f);
  }
  if (out.size === 0) throw new FileFormatError('hf', `${path}: weight_map is empty`);
  return out;
}
