// The protocol registry: name -> frozen JSON + runner + auditor. A duplicate name throws at load.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArgumentError, DefinitionError, UnknownProtocolError } from '../errors.js';
import { repoRoot } from './hash.js';
import type { Protocol, RunOptions, RunResult } from './protocol-types.js';
import { residualWindow } from './protocols/residual-window.js';
import { bitAllocation } from './protocols/bit-allocation.js';
import { windowSweep } from './protocols/window-sweep.js';
import { anchors } from './protocols/anchors.js';
import { needles } from './protocols/needles.js';
import { liveCache } from './protocols/live-cache.js';
import { resolveVariant } from './variant.js';

export type { Protocol, RunOptions, RunResult };

/** Model protocols (issue 5: window-sweep, anchors, needles) are listed with what they still need. */
export interface PlannedProtocol {
  readonly name: string;
  readonly title: string;
  readonly needs: string;
}

export const plannedProtocols: readonly PlannedProtocol[] = [];

export const protocols: ReadonlyMap<string, Protocol> = (() => {
  const m = new Map<string, Protocol>();
  for (const p of [residualWindow, bitAllocation, windowSweep, anchors, needles, liveCache]) {
    if (m.has(p.name)) throw new DefinitionError(`protocol '${p.name}' registered twice`);
    m.set(p.name, p);
  }
  return m;
})();

export function getProtocol(name: string): Protocol {
  const p = protocols.get(name);
  if (!p) throw new UnknownProtocolError(name, [...protocols.keys()]);
  return p;
}

/** The frozen JSON bytes and parsed spec of a registered protocol. */
export function loadProtocol(name: string): { protocol: Protocol; bytes: Uint8Array; spec: unknown } {
  const protocol = getProtocol(name);
  const bytes = new Uint8Array(readFileSync(join(repoRoot(), protocol.file)));
  return { protocol, bytes, spec: protocol.parse(JSON.parse(Buffer.from(bytes).toString('utf8'))) };
}

/** Runs a registered protocol from its frozen file into a new directory `out`. */
export function runProtocol(name: string, out: string, opts: RunOptions = {}): RunResult {
  const { protocol, bytes, spec } = loadProtocol(name);
  if (protocol.needsModel && !opts.model) throw new ArgumentError(`protocol ${name} needs a model (-m MODEL)`);
  return protocol.run(spec, bytes, out, opts);
}

/** Runs a user variant file ({"variantOf": NAME, "set": {...}}, variant.ts) into a new directory `out`. */
export function runVariantFile(path: string, out: string, opts: RunOptions = {}): RunResult {
  const { name, bytes } = resolveVariant(path);
  const protocol = getProtocol(name);
  if (protocol.needsModel && !opts.model) throw new ArgumentError(`protocol ${name} needs a model (-m MODEL)`);
  return protocol.run(protocol.parse(JSON.parse(Buffer.from(bytes).toString('utf8'))), bytes, out, opts);
}
