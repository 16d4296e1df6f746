import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProtocol } from '../protocol.js';
import { auditRun } from '../audit.js';
import { writeCapture } from '../capture.js';
import { synthesize } from '../synthetic.js';
import { parseBitAllocation, bytesPerCell, type BitAllocationSpec } from './bit-allocation-core.js';
import { runBitAllocation } from './bit-allocation.js';

// Tiny version: two small layers, two queries.
function tiny(): { spec: BitAllocationSpec; bytes: Uint8Array } {
  const frozen = JSON.parse(Buffer.from(loadProtocol('bit-allocation').bytes).toString('utf8')) as { synthetic: { layers: unknown[] } };
  const json = {
    ...frozen,
    synthetic: { ...frozen.synthetic, tokens: 96, headDim: 32, queries: 2, layers: frozen.synthetic.layers.slice(0, 2) },
    captureQueries: 2,
  };
  return { spec: parseBitAllocation(json), bytes: Buffer.from(JSON.stringify(json)) };
}
const tmp = () => mkdtempSync(join(tmpdir(), 'kvpack-ba-'));

test("bytes per cell at seed 000's cell (2 kv heads x 256): q4_0 576 B, q2k 448 B", () => {
  const spec = loadProtocol('bit-allocation').spec as BitAllocationSpec;
  const cell = (name: string) => bytesPerCell(spec.arms.find((a) => a.name === name)!, 2, 256);
  assert.equal(cell('q4_0'), 576);
  assert.equal(cell('q2k'), 448);
  assert.equal(cell('k4-v2c'), 448);
});

test('tiny run passes its controls and audits PASS, with a captured layer probed too', () => {
  const { spec, bytes } = tiny();
  const dir = tmp();
  const s = synthesize({ seed: 9, tokens: 40, headDim: 32, heads: 2, kvHeads: 1, queries: 40, ropeTheta: 10000 });
  const cap = join(dir, 'cap.kvcap');
  writeFileSync(
    cap,
    writeCapture({ meta: { model: 'synthetic' }, layers: [{ layer: 5, tokens: 40, heads: 2, kvHeads: 1, headDim: 32, q: s.q, k: s.k, v: s.v }] }),
  );
  const r = runBitAllocation(spec, bytes, join(dir, 'run'), { capture: cap });
  assert.ok(r.pass, r.checks.lines().join('\n'));
  assert.ok(r.headline[0]!.includes('capture-L5'));
  const a = auditRun(join(dir, 'run'));
  assert.ok(a.pass, a.lines().join('\n'));
});

test('negative control: quantization secretly disabled fires the floor checks', () => {
  const { spec, bytes } = tiny();
  const out = join(tmp(), 'run');
  const r = runBitAllocation(spec, bytes, out, { sabotageDisableQuantization: true });
  assert.equal(r.pass, false);
  const bad = r.checks.checks.filter((c) => !c.pass).map((c) => c.name);
  assert.ok(
    bad.some((n) => n.startsWith('control: attention relRms >')),
    bad.join('; '),
  );
  assert.ok(
    bad.some((n) => n.startsWith('bytes:')),
    bad.join('; '),
  );
  assert.equal(auditRun(out).pass, false);
});
