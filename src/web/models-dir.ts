// What `kvpack web --models DIR` offers the page: the .gguf files directly in DIR, and its Hugging Face
// directories (subdirectories holding config.json and a .safetensors file), each with the files the HF
// loader reads (isHfModelFile). Only regular files and real subdirectories count: a symlink could lead out
// of DIR, and nothing outside DIR is served. `servable` answers for one request path from a fresh look at
// DIR, so models added while the server runs appear and nothing unlisted is ever sent.
import { readdirSync, statSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { isHfModelFile } from '../hf/model-files.js';
import type { ServedFile } from '../hf/web-files.js';

export type ModelEntry =
  | { kind: 'gguf'; name: string; size: number }
  /** size: the listed files together; files: what the page's served-directory view reads. */
  | { kind: 'hf'; name: string; size: number; files: ServedFile[] };

const entries = (dir: string): Dirent[] => {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
};

const isGguf = (e: Dirent): boolean => e.isFile() && e.name.endsWith('.gguf');

/** The HF directory `name` in `dir`, or undefined when it is not one. */
function hfEntry(dir: string, name: string): Extract<ModelEntry, { kind: 'hf' }> | undefined {
  const sub = join(dir, name);
  const files = entries(sub)
    .filter((e) => e.isFile() && isHfModelFile(e.name))
    .map((e) => ({ name: e.name, size: statSync(join(sub, e.name)).size }))
    .sort((a, b) => a.name.localeCompare(b.name));
  if (!files.some((f) => f.name === 'config.json') || !files.some((f) => f.name.endsWith('.safetensors'))) return undefined;
  return { kind: 'hf', name, size: files.reduce((s, f) => s + f.size, 0), files };
}

/** DIR's models, by name. */
export function listModels(dir: string): ModelEntry[] {
  const out: ModelEntry[] = [];
  for (const e of entries(dir)) {
    if (isGguf(e)) out.push({ kind: 'gguf', name: e.name, size: statSync(join(dir, e.name)).size });
    else if (e.isDirectory()) {
      const hf = hfEntry(dir, e.name);
      if (hf) out.push(hf);
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** True when `pathname` ('/m.gguf' or '/hf-dir/file', decoded, normalized) is a file the listing offers. */
export function servable(dir: string, pathname: string): boolean {
  const parts = pathname.split('/').slice(1);
  if (parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\'))) return false;
  if (parts.length === 1) return entries(dir).some((e) => isGguf(e) && e.name === parts[0]);
  if (parts.length !== 2) return false;
  const [sub, file] = parts as [string, string];
  if (!entries(dir).some((e) => e.isDirectory() && e.name === sub)) return false;
  return hfEntry(dir, sub)?.files.some((f) => f.name === file) ?? false;
}
