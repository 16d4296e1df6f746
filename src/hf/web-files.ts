// A Hugging Face directory in a page, as the loader's ModelFiles: a folder the user picked (<input
// webkitdirectory>, or the directory's files picked together), read with FileReaderSync; or a directory a
// server lists (`kvpack web --models DIR`: models.json gives each file's name and size), read with HTTP
// Range requests so a safetensors file moves tensor by tensor. Both read synchronously: Workers only.
import { ArgumentError } from '../errors.js';
import { blobSource, urlSource } from '../gguf/web-sources.js';
import { noSuchFile, type ModelFiles } from './model-files.js';

/** One picked file and its path within the pick ('folder/config.json' from a folder, 'config.json' loose). */
export interface PickedFile {
  readonly path: string;
  readonly file: Blob;
}

/**
 * The picked files directly in the pick's top folder (a folder's subfolders are not the model's), by name.
 * `name` defaults to that folder's name.
 */
export function blobFiles(picked: readonly PickedFile[], name?: string): ModelFiles {
  const parts = picked.map((p) => p.path.split('/').filter((s) => s !== ''));
  const depth = Math.min(...parts.map((p) => p.length));
  if (!Number.isFinite(depth) || depth === 0) throw new ArgumentError('no files were picked');
  // Files picked loose have depth 1; a folder's have its name first.
  const folder = depth > 1 ? parts[0]![0]! : '';
  const byName = new Map<string, Blob>();
  parts.forEach((p, i) => {
    if (p.length !== depth || (folder && p[0] !== folder)) return;
    const file = p[depth - 1]!;
    if (byName.has(file)) throw new ArgumentError(`'${file}' was picked twice`);
    byName.set(file, picked[i]!.file);
  });
  const label = name ?? (folder || 'picked files');
  const dir: ModelFiles = {
    name: label,
    location: label,
    names: [...byName.keys()],
    locate: (file) => `${label}/${file}`,
    open(file) {
      const blob = byName.get(file);
      if (!blob) throw noSuchFile(dir, file);
      return blobSource(blob, dir.locate(file));
    },
  };
  return dir;
}

/** A listed file of a served directory. */
export interface ServedFile {
  readonly name: string;
  readonly size: number;
}

/** A served directory: `base` is its URL ending in '/', `files` what the server lists of it. */
export function urlFiles(base: string, files: readonly ServedFile[], name: string): ModelFiles {
  if (!base.endsWith('/')) throw new ArgumentError(`'${base}': a directory URL ends in '/'`);
  const sizes = new Map(files.map((f) => [f.name, f.size]));
  const dir: ModelFiles = {
    name,
    location: base,
    names: [...sizes.keys()],
    locate: (file) => base + file,
    open(file) {
      const size = sizes.get(file);
      if (size === undefined) throw noSuchFile(dir, file);
      return urlSource(base + encodeURIComponent(file), dir.locate(file), size);
    },
  };
  return dir;
}
