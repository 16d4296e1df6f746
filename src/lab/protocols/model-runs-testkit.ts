// Test helpers for the model protocols: tiny specs run on stories260K (skipped when absent), audited, tampered.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProtocol } from '../protocol.js';
import { auditRun } from '../audit.js';
import { repoRoot } from '../hash.js';

const MODEL = join(repoRoot(), '..', 'shared', 'models', 'stories260K.bin');

/** The frozen protocol with small sizes (a few seconds on stories260K). */
function tiny(name: string, patch: Record<string, unknown>): { spec: unknown; bytes: Uint8Array; run: ReturnType<typeof loadProtocol>['protocol'] } {
  const { protocol, bytes } = loadProtocol(name);
  const json = { ...(JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>), ...patch };
  const b = Buffer.from(JSON.stringify(json));
  return { spec: protocol.parse(json), bytes: b, run: protocol };
}

/** Runs a tiny spec, audits it, flips one byte of a logit digest file and audits again. */
export function runAndTamper(t: { skip(msg: string): void }, name: string, patch: Record<string, unknown>): void {
  if (!existsSync(MODEL)) return void t.skip(`${MODEL} not present`);
  const { spec, bytes, run } = tiny(name, patch);
  const out = join(mkdtempSync(join(tmpdir(), `kvpack-${name}-`)), 'run');
  const r = run.run(spec, bytes, out, { model: MODEL });
  assert.ok(r.pass, r.checks.lines().join('\n'));
  const a = auditRun(out);
  assert.ok(a.pass, a.lines().join('\n'));
  const f = join(out, 'digests', 'control-f16', 'p0.f32');
  const target = existsSync(f) ? f : join(out, 'runs.json');
  const b = readFileSync(target);
  b[b.length >> 1] ^= 1;
  writeFileSync(target, b);
  assert.equal(auditRun(out).pass, false);
}

/** The sabotage hook (quantization silently off) must fail the read-back and bytes controls. */
export function sabotaged(t: { skip(msg: string): void }, name: string, patch: Record<string, unknown>): void {
  if (!existsSync(MODEL)) return void t.skip(`${MODEL} not present`);
  const { spec, bytes, run } = tiny(name, patch);
  const out = join(mkdtempSync(join(tmpdir(), `kvpack-${name}-`)), 'run');
  const r = run.run(spec, bytes, out, { model: MODEL, sabotageDisableQuantization: true });
  assert.equal(r.pass, false);
  const bad = r.checks.checks.filter((c) => !c.pass).map((c) => c.name);
  assert.ok(bad.some((n) => n.startsWith('control: stored K/V relL2')), bad.join('; '));
  assert.ok(bad.some((n) => n.startsWith('bytes:')), bad.join('; '));
}

