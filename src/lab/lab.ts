// `kvpack lab`: runs every synthetic protocol into one new directory, renders the report, writes a manifest.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RunWriter, readManifest, type Environment } from './manifest.js';
import { sha256 } from './hash.js';
import { protocols, loadProtocol } from './protocol.js';
import { readSection, renderMarkdown, renderHtml } from './report.js';
import { LAB } from './audit.js';
import type { RunResult } from './protocol-types.js';

export interface LabOptions {
  /** Output directory; must not exist. Default: a new lab-out/<timestamp>. */
  readonly out?: string;
  /** Model file for the model protocols (window-sweep, anchors, needles); without it they are skipped. */
  readonly model?: string;
  /** Protocol names to run (default: every synthetic protocol, plus the model ones when a model is given). */
  readonly only?: readonly string[];
  readonly onStart?: (name: string, total: number) => void;
  readonly onProgress?: (name: string, done: number, total: number) => void;
}

export interface LabResult {
  readonly dir: string;
  readonly pass: boolean;
  readonly runs: { name: string; result: RunResult }[];
  readonly skipped: { name: string; reason: string }[];
}

/** lab-out/<UTC timestamp>, with -2, -3... if that name exists already (never overwrites). */
export function defaultLabDir(base = 'lab-out', now = new Date()): string {
  const stamp = now.toISOString().replace(/[:.]/g, '-').replace('T', '_').replace('Z', '');
  let dir = resolve(base, stamp);
  for (let i = 2; existsSync(dir) || existsSync(dir + '.partial-' + process.pid + '-0'); i++) dir = resolve(base, `${stamp}-${i}`);
  return dir;
}

/** The lab's own "protocol": which protocols ran, each frozen file's sha256, and the model (if any). */
function labConfig(names: readonly string[], model: string | null): string {
  const frozen: Record<string, string> = {};
  for (const n of names) frozen[n] = sha256(loadProtocol(n).bytes);
  return JSON.stringify({ name: LAB, runs: names, frozen, model }, null, 2) + '\n';
}

export function runLab(opts: LabOptions = {}): LabResult {
  const out = opts.out ?? defaultLabDir();
  const model = opts.model ?? null;
  const names = (opts.only ?? [...protocols.values()].filter((p) => model || !p.needsModel).map((p) => p.name)).slice();
  const w = new RunWriter(out, LAB, Buffer.from(labConfig(names, model)));
  const runs: LabResult['runs'] = [];
  for (const name of names) {
    const { protocol, bytes, spec } = loadProtocol(name);
    let started = false;
    const result = protocol.run(spec, bytes, join(w.tmp, name), {
      model: model ?? undefined,
      progress: (done, total) => {
        if (!started) opts.onStart?.(name, total);
        started = true;
        opts.onProgress?.(name, done, total);
      },
    });
    w.adopt(name, 'output');
    runs.push({ name, result });
  }
  const env = readManifest(join(w.tmp, names[0]!)).environment as Environment;
  const sections = names.map((n) => readSection(join(w.tmp, n), n));
  w.write('report.md', renderMarkdown(sections, env, model), 'output');
  w.write('report.html', renderHtml(sections, env, model), 'output');
  w.finish();
  const skipped = [...protocols.values()]
    .filter((p) => p.needsModel && !names.includes(p.name))
    .map((p) => ({ name: p.name, reason: model ? 'not selected' : 'needs -m MODEL' }));
  return { dir: w.out, pass: runs.every((r) => r.result.pass), runs, skipped };
}
