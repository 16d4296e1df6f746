// `kvpack inspect FILE`: a GGUF's (or llama2.c checkpoint's, or Hugging Face directory's) metadata, tensors, parameter count, and
// the KV-cache bytes each scheme needs at a context.
import type { Command } from 'commander';
import { kvBytes } from '../cache/accounting.js';
import { schemePolicy, schemes } from '../cache/schemes.js';
import { withSlidingWindows } from '../cache/swa.js';
import { getArchitecture } from '../model/arch/registry.js';
import { engineHparams } from '../model/hparams.js';
import { layerWindows } from '../model/model.js';
import { isGgufFile } from '../gguf/file-source.js';
import { loadLlama2c } from '../gguf/llama2c-file.js';
import { readHparams, tensorBytes, type LoadedModel, type ModelHparams } from '../gguf/model.js';
import type { Metadata } from '../gguf/metadata.js';
import { readGguf } from '../gguf/reader.js';
import { ggmlTypeName } from '../gguf/types.js';
import { isHfDir, loadHfModel } from '../hf/load.js';
import type { GgufValue } from '../gguf/values.js';
import { intArg, table } from './args.js';

interface InspectOpts {
  ctx?: number;
  json?: boolean;
  all?: boolean;
}

interface TensorRow {
  name: string;
  type: string;
  shape: number[];
  elements: number;
  bytes: number;
}

/** One-line rendering of a metadata value; arrays show their type, length and first items. */
function showValue(v: GgufValue, all: boolean): string {
  if (v.type === 'array') {
    const items = Array.from(v.value as ArrayLike<unknown>)
      .slice(0, all ? undefined : 6)
      .map((x) => (typeof x === 'string' ? JSON.stringify(x) : String(x)));
    const more = !all && v.value.length > 6 ? ', ...' : '';
    return `[${v.itemType} x ${v.value.length}] ${items.join(', ')}${more}`;
  }
  const s = v.type === 'string' ? JSON.stringify(v.value) : String(v.value);
  return all || s.length <= 120 ? s : `${s.slice(0, 117)}...`;
}

/** JSON form of a value: bigints as strings, long arrays as a summary. */
function jsonValue(v: GgufValue): unknown {
  if (v.type === 'array') {
    const items = Array.from(v.value as ArrayLike<unknown>)
      .slice(0, 16)
      .map((x) => (typeof x === 'bigint' ? String(x) : x));
    return { type: 'array', itemType: v.itemType, length: v.value.length, head: items };
  }
  return { type: v.type, value: typeof v.value === 'bigint' ? String(v.value) : v.value };
}

/**
 * KV bytes per named scheme at `ctx` positions, from the cache accounting (no window or sinks: the bulk
 * as each scheme stores it, block padding and staging included). HOOK (kvBytesPerScheme): built on '../cache/accounting.js' kvBytes; `f16Check` is the plain
 * 2 x layers x ctx x kvHeads x headDim x 2 B the f16 row's `keepAllBytes` must equal. `bytes` is what the
 * engine's cache holds: sliding-window layers (`windows[l]` > 0) keep only their window.
 */
export function kvBytesPerScheme(
  h: ModelHparams,
  ctx: number,
  windows: readonly number[] = [],
): { f16Check: number; rows: { scheme: string; k: string; v: string; bytes: number; keepAllBytes: number; bitsPerElement: number }[] } {
  const f16Check = 2 * h.nLayer * ctx * h.nHeadKv * h.headDim * 2;
  const rows = [...schemes.values()].map((s) => {
    const policy = schemePolicy(s.name, { window: 0, sinks: 0 });
    const shape = { ctx, layers: h.nLayer, kvHeads: h.nHeadKv, headDim: h.headDim };
    const b = kvBytes({ ...shape, policy: withSlidingWindows(policy, windows) });
    return { scheme: s.name, k: s.k, v: s.v, bytes: b.total, keepAllBytes: kvBytes({ ...shape, policy }).total, bitsPerElement: b.bitsPerElement };
  });
  return { f16Check, rows };
}

/** Per-layer sliding windows as the engine reads them (gemma3's local layers); [] when unknown or none. */
function modelWindows(arch: string, hparams: ModelHparams, metadata: Metadata): number[] {
  try {
    return layerWindows(engineHparams({ arch, hparams, metadata, tensors: new Map() }, getArchitecture(arch).hparams));
  } catch {
    // An architecture the engine does not run: show the keep-everything figures only.
    return [];
  }
}

/** Everything `inspect` reports, as data (the CLI prints it; tests read it). */
export function inspectFile(path: string, ctx?: number) {
  let format: string;
  let metadata: ReadonlyMap<string, GgufValue>;
  let tensors: TensorRow[];
  let hparams: ModelHparams | undefined;
  let hparamsError: string | undefined;
  let arch = 'llama';
  if (!isHfDir(path) && isGgufFile(path)) {
    const f = readGguf(path);
    format = `GGUF v${f.version} (alignment ${f.alignment})`;
    metadata = f.metadata;
    tensors = f.tensors.map((t) => ({ name: t.name, type: ggmlTypeName(t.type), shape: [...t.dims], elements: t.elements, bytes: t.bytes }));
    try {
      hparams = readHparams(f.metadata, f.tensors.find((t) => t.name === 'token_embd.weight')?.dims[1]);
      arch = String(f.metadata.get('general.architecture')?.value);
    } catch (e) {
      hparamsError = (e as Error).message;
    }
  } else {
    // A Hugging Face directory, else a llama2.c checkpoint (its loader reports what does not fit).
    const hf = isHfDir(path);
    const m: LoadedModel = hf ? loadHfModel(path) : loadLlama2c(path);
    format = hf ? 'Hugging Face directory (safetensors, shown as the GGUF it converts to)' : 'llama2.c checkpoint';
    metadata = m.metadata;
    hparams = m.hparams;
    arch = m.arch;
    tensors = [...m.tensors].map(([name, t]) => {
      const elements = t.dims.reduce((a, b) => a * b, 1);
      return { name, type: ggmlTypeName(t.type), shape: [...t.dims], elements, bytes: tensorBytes(t) };
    });
  }
  const context = ctx ?? hparams?.nCtxTrain ?? 4096;
  const windows = hparams ? modelWindows(arch, hparams, metadata) : [];
  return {
    path,
    format,
    metadata,
    tensors,
    parameters: tensors.reduce((s, t) => s + t.elements, 0),
    tensorBytes: tensors.reduce((s, t) => s + t.bytes, 0),
    hparams,
    hparamsError,
    ctx: context,
    /** Per layer: its sliding window (0 = global); empty when the engine does not know the architecture. */
    slidingWindows: windows,
    kv: hparams ? kvBytesPerScheme(hparams, context, windows) : undefined,
  };
}

const MiB = 2 ** 20;

export function register(program: Command): void {
  program
    .command('inspect')
    .description('show a model file: metadata, tensors (types, shapes), parameter count, KV bytes per scheme')
    .argument('<file>', 'GGUF file, llama2.c checkpoint or Hugging Face directory')
    .option('--ctx <n>', "context length for the KV table (default: the model's training context)", intArg('--ctx', 1))
    .option('--all', 'print every metadata array item and full strings')
    .option('--json', 'machine-readable output')
    .action((file: string, opts: InspectOpts) => {
      const r = inspectFile(file, opts.ctx);
      if (opts.json) {
        const md = Object.fromEntries([...r.metadata].map(([k, v]) => [k, jsonValue(v)]));
        return void console.log(JSON.stringify({ ...r, metadata: md }, null, 2));
      }
      console.log(`${r.path}: ${r.format}`);
      console.log(`\nmetadata (${r.metadata.size} keys)`);
      for (const [k, v] of r.metadata) console.log(`  ${k} = ${showValue(v, !!opts.all)}`);
      const byType = new Map<string, number>();
      for (const t of r.tensors) byType.set(t.type, (byType.get(t.type) ?? 0) + 1);
      console.log(`\ntensors (${r.tensors.length}; ${[...byType].map(([t, n]) => `${n} ${t}`).join(', ')})`);
      console.log(table([['name', 'type', 'shape (ne0 first)', 'bytes'], ...r.tensors.map((t) => [t.name, t.type, `[${t.shape.join(', ')}]`, t.bytes])]));
      console.log(`\nparameters: ${r.parameters} (${(r.tensorBytes / MiB).toFixed(2)} MiB of tensor data)`);
      if (!r.hparams || !r.kv) return void console.log(`\nno KV table: ${r.hparamsError ?? 'no hyperparameters'}`);
      const h = r.hparams;
      const local = r.slidingWindows.filter((w) => w > 0);
      const swa = local.length ? `; ${local.length} sliding-window layers keep a ${Math.max(...local)}-position window` : '';
      console.log(`\nKV cache at ctx ${r.ctx}: ${h.nLayer} layers x ${h.nHeadKv} kv heads x ${h.headDim} dims (f16 = ${r.kv.f16Check} B${swa})`);
      console.log(
        table([
          ['scheme', 'K', 'V', 'KV bytes', 'MiB', ...(swa ? ['keep-all MiB'] : []), 'bits/elem'],
          ...r.kv.rows.map((x) => [
            x.scheme,
            x.k,
            x.v,
            x.bytes,
            (x.bytes / MiB).toFixed(2),
            ...(swa ? [(x.keepAllBytes / MiB).toFixed(2)] : []),
            x.bitsPerElement.toFixed(3),
          ]),
        ]),
      );
    });
}
