// Hugging Face directories of every supported architecture (tiny random weights, f32/f16/bf16, single and
// sharded, tied weights stored once as lm_head, gemma3 also in its multimodal layout) load into exactly the
// tensors and hyperparameters of the GGUF llama.cpp's converter would write for the same weights, and the
// engine gives identical logits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CachePolicy } from '../../src/cache/policy.js';
import type { LoadedModel } from '../../src/gguf/model.js';
import { loadHfModel } from '../../src/hf/load.js';
import { modelFromLoaded, type Model } from '../../src/model/model.js';
import { readSafetensors } from '../../src/hf/safetensors.js';
import { HF_SHAPES, writeHfDir, type HfDirOptions, type HfFixture } from '../fixtures/hf-dir.js';
import type { TinyArch } from '../fixtures/arch-tensors.js';

const F32: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32' };

const CASES: { arch: TinyArch; o: HfDirOptions }[] = [
  { arch: 'llama', o: { dtype: 'F32', shards: 2 } },
  { arch: 'llama', o: { dtype: 'BF16' } },
  { arch: 'qwen2', o: { dtype: 'BF16' } },
  { arch: 'qwen2', o: { dtype: 'F16', lmHeadOnly: true } },
  { arch: 'qwen3', o: { dtype: 'F16', shards: 3 } },
  { arch: 'gemma3', o: { dtype: 'BF16' } },
  { arch: 'gemma3', o: { dtype: 'F32', multimodal: true } },
];

function withDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Logits of every position of a 16-token prompt (past gemma3's 5-token window). */
function logits(m: Model, vocab: number): Float32Array {
  const cache = m.createCache({ policy: F32, capacity: 256 });
  const toks = Array.from({ length: 16 }, (_, i) => (i * 29 + 3) % vocab);
  const out = m.forward(toks, cache, { allLogits: true });
  cache.dispose();
  return out;
}

function sameTensors(got: LoadedModel, want: LoadedModel): void {
  // Order is checked on the real model (its file is llama.cpp's order); here the set of names.
  assert.deepEqual([...got.tensors.keys()].sort(), [...want.tensors.keys()].sort(), 'names');
  for (const [name, w] of want.tensors) {
    const g = got.tensors.get(name)!;
    assert.deepEqual([g.type, g.dims], [w.type, w.dims], `${name}: type and dims`);
    assert.ok(Buffer.from(g.data).equals(Buffer.from(w.data)), `${name}: bytes`);
  }
}

for (const { arch, o } of CASES) {
  const label = `${arch} ${o.dtype}${o.shards ? `, ${o.shards} shards` : ''}${o.multimodal ? ', multimodal layout' : ''}${o.lmHeadOnly ? ', tied weights stored as lm_head' : ''}`;
  test(`HF ${label}: the tensors, hparams and logits of the GGUF llama.cpp would write`, () =>
    withDir((dir) => {
      const ref = writeHfDir(dir, arch, o);
      const loaded = loadHfModel(dir);
      assert.equal(loaded.arch, arch);
      sameTensors(loaded, ref.gguf);
      assert.deepEqual(loaded.hparams, ref.gguf.hparams);
      const ours = modelFromLoaded(loaded, { source: 'hf' });
      const theirs = modelFromLoaded(ref.gguf);
      assert.deepEqual(ours.hp, theirs.hp);
      assert.deepEqual(logits(ours, HF_SHAPES[arch].vocab), logits(theirs, HF_SHAPES[arch].vocab));
    }));
}

test('negative controls: llama q/k rows and gemma3 norms are not stored as GGUF holds them', () =>
  withDir((dir) => {
    // A loader copying these tensors as stored would fail the comparisons above, and its logits would differ.
    const stored = (d: string, f: HfFixture, gguf: string): Uint8Array => {
      const name = [...f.names].find(([, g]) => g === gguf)![0];
      const t = readSafetensors(join(d, 'model.safetensors')).tensors.get(name)!;
      return t.source.read(t.offset, t.nbytes);
    };
    const llamaDir = join(dir, 'llama');
    const llama = writeHfDir(llamaDir, 'llama');
    const asStored = new Map(llama.gguf.tensors);
    for (const n of ['blk.0.attn_q.weight', 'blk.0.attn_k.weight']) {
      const raw = stored(llamaDir, llama, n);
      assert.ok(!Buffer.from(raw).equals(Buffer.from(llama.gguf.tensors.get(n)!.data)), `${n} is permuted`);
      const t = llama.gguf.tensors.get(n)!;
      asStored.set(n, { type: t.type, dims: t.dims, data: raw });
    }
    const vocab = HF_SHAPES.llama.vocab;
    const a = logits(modelFromLoaded(llama.gguf), vocab);
    const b = logits(modelFromLoaded({ ...llama.gguf, tensors: asStored }), vocab);
    const maxDiff = a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);
    assert.ok(maxDiff > 1e-3, `unpermuted q/k change the logits (max diff ${maxDiff})`);

    const gemmaDir = join(dir, 'gemma');
    const gemma = writeHfDir(gemmaDir, 'gemma3');
    const norm = new Float32Array(stored(gemmaDir, gemma, 'blk.0.attn_norm.weight').slice().buffer);
    const shifted = new Float32Array(gemma.gguf.tensors.get('blk.0.attn_norm.weight')!.data.slice().buffer);
    assert.deepEqual(
      shifted,
      norm.map((x) => x + 1),
    );
  }));
