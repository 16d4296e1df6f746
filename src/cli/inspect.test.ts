// `kvpack inspect` data: parameter count, tensor table, and a KV table whose f16 row is the plain formula.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyLlama } from '../gguf/tiny.js';
import { writeGguf } from '../gguf/writer.js';
import { inspectFile } from './inspect.js';

test('inspectFile reports tensors, parameters and per-scheme KV bytes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-inspect-'));
  try {
    const path = join(dir, 't.gguf');
    // dim 64, 2 layers, 4 heads (head 16), 2 kv heads, ff 128, vocab 320.
    writeGguf(path, tinyLlama({ weightType: 'q8_0' }));
    const r = inspectFile(path, 1024);
    assert.match(r.format, /^GGUF v3/);
    assert.equal(r.tensors.length, 1 + 9 * 2 + 1);
    const perLayer = 64 + 64 * 64 + 2 * 64 * 32 + 64 * 64 + 64 + 3 * 64 * 128;
    assert.equal(r.parameters, 320 * 64 + 2 * perLayer + 64);
    assert.deepEqual(r.tensors.find((t) => t.name === 'blk.1.ffn_down.weight'), { name: 'blk.1.ffn_down.weight', type: 'q8_0', shape: [128, 64], elements: 8192, bytes: (8192 / 32) * 34 });
    const f16 = r.kv!.rows.find((x) => x.scheme === 'f16')!;
    assert.equal(r.kv!.f16Check, 2 * 2 * 1024 * 2 * 16 * 2);
    assert.equal(f16.bytes, r.kv!.f16Check);
    assert.ok(r.kv!.rows.find((x) => x.scheme === 'q2k')!.bytes < f16.bytes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
