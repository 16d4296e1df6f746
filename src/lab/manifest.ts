// Run directories and their manifest: every file hashed, written to a temp dir, renamed into place at the end.
import { cpus, platform, arch } from 'node:os';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { partialDir, publishDir } from '../io/atomic.js';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { KvpackError, FileFormatError, ArgumentError } from '../errors.js';
import type { CheckList } from './checks.js';
import { sha256, sha256File, sourceListing } from './hash.js';

/** Refusing to write into an existing output directory (results are never overwritten or mixed). */
export class OutputExistsError extends KvpackError {
  constructor(dir: string) {
    super('OUTPUT_EXISTS', `output directory ${dir} already exists; choose a new one (runs never overwrite)`);
  }
}

export type FileRole = 'protocol' | 'input' | 'output' | 'meta';

export interface Environment {
  readonly node: string;
  readonly platform: string;
  readonly arch: string;
  readonly cpuModel: string;
  readonly cpuCount: number;
}

export interface Manifest {
  readonly kind: 'kvpack-run';
  readonly version: 1;
  /** `variant`: a user variant of a built-in protocol (variant.ts), as its protocol.json records it. */
  readonly protocol: { readonly name: string; readonly file: string; readonly sha256: string; readonly variant?: unknown };
  /** Tree hash = sha256 of the saved LF-normalized listing (source-tree.txt). */
  readonly source: { readonly file: string; readonly sha256: string };
  readonly environment: Environment;
  readonly createdAt: string;
  /** Every file in the run dir except manifest.json, by posix path. */
  readonly files: Record<string, { readonly role: FileRole; readonly bytes: number; readonly sha256: string }>;
}

export const MANIFEST = 'manifest.json';
export const ENVIRONMENT = 'environment.json';
export const SOURCE_TREE = 'source-tree.txt';
export const PROTOCOL_COPY = 'protocol.json';

export function environment(): Environment {
  const c = cpus();
  return { node: process.version, platform: platform(), arch: arch(), cpuModel: c[0]?.model.trim() ?? 'unknown', cpuCount: c.length };
}

/**
 * Writes one run: files go to `<out>.partial-<pid>-<n>` and the directory is renamed to `out` only when the
 * manifest is complete, so `out` is never half-written. A failed run leaves the partial dir for inspection.
 */
export class RunWriter {
  readonly out: string;
  readonly tmp: string;
  private readonly roles = new Map<string, FileRole>();
  private readonly listing: string;
  private done = false;

  constructor(
    out: string,
    readonly protocolName: string,
    protocolBytes: Uint8Array,
  ) {
    this.out = resolve(out);
    if (existsSync(this.out)) throw new OutputExistsError(this.out);
    mkdirSync(dirname(this.out), { recursive: true });
    this.tmp = partialDir(this.out);
    // Hash the source at the start: the code that runs is the code that was there when it began.
    this.listing = sourceListing();
    this.write(PROTOCOL_COPY, protocolBytes, 'protocol');
    this.write(ENVIRONMENT, JSON.stringify(environment(), null, 2) + '\n', 'meta');
    this.write(SOURCE_TREE, this.listing, 'meta');
  }

  write(rel: string, data: Uint8Array | string, role: FileRole): void {
    if (this.done) throw new ArgumentError('RunWriter: run already finished');
    if (rel === MANIFEST || rel.includes('..') || rel.startsWith('/')) throw new ArgumentError(`RunWriter: bad file name ${rel}`);
    if (this.roles.has(rel)) throw new ArgumentError(`RunWriter: ${rel} written twice`);
    const p = join(this.tmp, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, data);
    this.roles.set(rel, role);
  }

  writeJson(rel: string, value: unknown, role: FileRole): void {
    this.write(rel, JSON.stringify(value, null, 2) + '\n', role);
  }

  /** Registers every file already written under tmp/rel (e.g. a finished sub-run) with one role. */
  adopt(rel: string, role: FileRole): void {
    const files: string[] = [];
    walk(join(this.tmp, rel), this.tmp, files);
    for (const f of files) {
      if (this.roles.has(f)) throw new ArgumentError(`RunWriter: ${f} registered twice`);
      this.roles.set(f, role);
    }
  }

  /** Hashes every file as it is on disk, writes manifest.json and renames the directory into place. */
  finish(): Manifest {
    const files: Manifest['files'] = {};
    for (const rel of [...this.roles.keys()].sort()) {
      const p = join(this.tmp, rel);
      files[rel] = { role: this.roles.get(rel)!, bytes: statSync(p).size, sha256: sha256File(p) };
    }
    const manifest: Manifest = {
      kind: 'kvpack-run',
      version: 1,
      protocol: { name: this.protocolName, file: PROTOCOL_COPY, sha256: files[PROTOCOL_COPY]!.sha256, ...variantOf(join(this.tmp, PROTOCOL_COPY)) },
      source: { file: SOURCE_TREE, sha256: sha256(this.listing) },
      environment: JSON.parse(readFileSync(join(this.tmp, ENVIRONMENT), 'utf8')) as Environment,
      createdAt: new Date().toISOString(),
      files,
    };
    writeFileSync(join(this.tmp, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
    if (existsSync(this.out)) throw new OutputExistsError(this.out);
    publishDir(this.tmp, this.out);
    this.done = true;
    return manifest;
  }
}

/** The variant record of a protocol.json, when it has one (never throws: a bad file fails its own checks). */
function variantOf(path: string): { variant?: unknown } {
  try {
    const v = (JSON.parse(readFileSync(path, 'utf8')) as { variant?: unknown }).variant;
    return v === undefined ? {} : { variant: v };
  } catch {
    return {};
  }
}

function walk(dir: string, root: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, root, out);
    else out.push(relative(root, p).split(sep).join('/'));
  }
}

export function readManifest(dir: string): Manifest {
  const p = join(dir, MANIFEST);
  if (!existsSync(p)) throw new FileFormatError('manifest', `${p} not found`);
  const m = JSON.parse(readFileSync(p, 'utf8')) as Manifest;
  if (m.kind !== 'kvpack-run' || m.version !== 1 || typeof m.files !== 'object') throw new FileFormatError('manifest', `${p} is not a kvpack run manifest`);
  return m;
}

/**
 * The protocol-independent checks: every listed file exists with its size and sha256, no unlisted files,
 * and the manifest's protocol / source / environment entries agree with the saved files.
 */
export function auditManifest(dir: string, m: Manifest, checks: CheckList, currentListing?: string): void {
  const listed = Object.keys(m.files).sort();
  const onDisk: string[] = [];
  walk(dir, dir, onDisk);
  const extra = onDisk.filter((f) => f !== MANIFEST && !(f in m.files));
  checks.add('no files outside the manifest', extra.length === 0, extra.length ? `unlisted: ${extra.slice(0, 3).join(', ')}` : `${onDisk.length - 1} files`);
  const bad: string[] = [];
  for (const rel of listed) {
    const p = join(dir, rel);
    const e = m.files[rel]!;
    if (!existsSync(p)) bad.push(`${rel} missing`);
    else if (statSync(p).size !== e.bytes) bad.push(`${rel} size ${statSync(p).size} != ${e.bytes}`);
    else if (sha256File(p) !== e.sha256) bad.push(`${rel} sha256 differs`);
  }
  checks.add(
    'every file matches its manifest sha256 and size',
    bad.length === 0,
    bad.length ? `${bad.length} bad; first: ${bad[0]}` : `${listed.length} files`,
  );
  checks.try('manifest protocol entry matches protocol.json', () => {
    const ok = m.protocol.file === PROTOCOL_COPY && m.files[PROTOCOL_COPY]?.role === 'protocol' && sha256File(join(dir, PROTOCOL_COPY)) === m.protocol.sha256;
    const name = (JSON.parse(readFileSync(join(dir, PROTOCOL_COPY), 'utf8')) as { name?: string }).name;
    return [ok && name === m.protocol.name, `${m.protocol.name} ${m.protocol.sha256.slice(0, 12)}`];
  });
  checks.try('manifest source hash matches source-tree.txt', () => [
    m.source.file === SOURCE_TREE && sha256File(join(dir, SOURCE_TREE)) === m.source.sha256,
    m.source.sha256.slice(0, 12),
  ]);
  checks.try('manifest environment matches environment.json', () => {
    const saved = readFileSync(join(dir, ENVIRONMENT), 'utf8');
    return [saved === JSON.stringify(m.environment, null, 2) + '\n', `${m.environment.node} ${m.environment.platform} ${m.environment.cpuModel}`];
  });
  // Provenance, not a verdict: the recomputation lines decide; a later checkout may still reproduce the run.
  try {
    const now = currentListing ?? sourceListing();
    const then = readFileSync(join(dir, SOURCE_TREE), 'utf8');
    if (now === then) checks.note(`this checkout has the run's source tree (${sha256(now).slice(0, 12)})`);
    else {
      const a = new Set(then.split('\n'));
      const changed = now
        .split('\n')
        .filter((l) => l && !a.has(l))
        .map((l) => l.slice(66));
      checks.note(`this checkout's source differs from the run's (${changed.slice(0, 3).join(', ') || 'files removed'}); recomputed with the current code`);
    }
  } catch (e) {
    checks.note(`source tree not compared: ${(e as Error).message}`);
  }
}

/** Short name of a run directory for messages. */
export function runName(dir: string): string {
  return basename(resolve(dir));
}
