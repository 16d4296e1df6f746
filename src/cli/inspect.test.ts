// `kvpack inspect` data: parameter count, tensor table, and a KV table whose f16 row is the plain formula.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyLlama } from '../../test/fixtures/tiny.js';
import { writeGguf } from '../gguf/writer.js';
import { inspectFile } from './inspect.js';
import { crossModel } from '../../test/crosscheck/models.js';
import { writeHfDir } from '../../test/fixtures/hf-dir.js';

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
    assert.deepEqual(
      r.tensors.find((t) => t.name === 'blk.1.ffn_down.weight'),
      { name: 'blk.1.ffn_down.weight', type: 'q8_0', shape: [128, 64], elements: 8192, bytes: (8192 / 32) * 34 },
    );
    const f16 = r.kv!.rows.find((x) => x.scheme === 'f16')!;
    assert.equal(r.kv!.f16Check, 2 * 2 * 1024 * 2 * 16 * 2);
    assert.equal(f16.bytes, r.kv!.f16Check);
    assert.ok(r.kv!.rows.find((x) => x.scheme === 'q2k')!.bytes < f16.bytes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('inspectFile on gemma3: sliding-window layers hold only their window, the keep-all column the plain formula', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-inspect-'));
  try {
    const path = join(dir, 'g.gguf');
    // 6 layers (5 local with window 16, layer 5 global), 2 kv heads x 32 dims.
    writeGguf(path, crossModel('gemma3', { weightType: 'f32' }));
    const r = inspectFile(path, 4096);
    assert.deepEqual(r.slidingWindows, [16, 16, 16, 16, 16, 0]);
    const f16 = r.kv!.rows.find((x) => x.scheme === 'f16')!;
    const cell = 2 * 32 * 2 * 2; // one position's f16 K+V in one layer
    assert.equal(f16.keepAllBytes, r.kv!.f16Check);
    assert.equal(r.kv!.f16Check, 6 * 4096 * cell);
    // A local layer keeps from the 256-token chunk boundary at or before 4096 - 16 = 4080: 3840, 256 positions.
    assert.equal(f16.bytes, (4096 + 5 * 256) * cell);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('inspectFile on a Hugging Face directory: the tensors as GGUF names and types, its sliding windows', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-inspect-hf-'));
  try {
    // gemma3: 7 layers (window 5, layer 5 global), bf16 matrices, norms widened to f32.
    writeHfDir(dir, 'gemma3', { dtype: 'BF16' });
    const r = inspectFile(dir);
    assert.match(r.format, /^Hugging Face directory/);
    assert.equal(r.metadata.get('general.architecture')?.value, 'gemma3');
    assert.deepEqual(
      r.tensors.find((t) => t.name === 'blk.0.attn_q.weight'),
      { name: 'blk.0.attn_q.weight', type: 'bf16', shape: [64, 128], elements: 8192, bytes: 16384 },
    );
    assert.equal(r.tensors.find((t) => t.name === 'blk.0.attn_q_norm.weight')?.type, 'f32');
    assert.deepEqual(r.slidingWindows, [5, 5, 5, 5, 5, 0, 5]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
