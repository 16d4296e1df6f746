// Cross-checks with llama.cpp's own GGUF code: we read and re-write a file its writer produced, and its
// loader (node-llama-cpp, CPU build) accepts tiny models our writer produced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dequantizeTensor } from '../kernels/matmul/dequant.js';
import { loadGgufModel, modelToGgufInput } from './model.js';
import { readGguf } from './reader.js';
import { tinyLlama } from '../../test/fixtures/tiny.js';
import { GGML } from './types.js';
import { encodeGguf, writeGguf } from './writer.js';

function repoRoot(): URL {
  for (let u = new URL('./', import.meta.url); ; u = new URL('../', u)) {
    if (existsSync(new URL('package.json', u))) return u;
    if (u.pathname === '/') throw new Error(`no package.json above ${import.meta.url}`);
  }
}
const STORIES = new URL('../shared/models/stories260K.gguf', repoRoot());

test('stories260K.gguf (written by llama.cpp): metadata and tensor table are sane; our writer reproduces it', (t) => {
  if (!existsSync(STORIES)) {
    t.skip('../shared/models/stories260K.gguf not present');
    return;
  }
  const f = readGguf(fileURLToPath(STORIES));
  assert.equal(f.version, 3);
  assert.equal(f.getString('general.architecture'), 'llama');
  assert.equal(f.getString('tokenizer.ggml.model'), 'llama');
  const m = loadGgufModel(fileURLToPath(STORIES));
  assert.deepEqual(
    [m.hparams.nEmbd, m.hparams.nFf, m.hparams.nLayer, m.hparams.nHead, m.hparams.nHeadKv, m.hparams.nVocab, m.hparams.nCtxTrain, m.hparams.headDim],
    [64, 172, 5, 8, 4, 512, 512, 8],
  );
  assert.equal(f.getArray('tokenizer.ggml.scores', 'f32').length, 512);
  assert.equal(f.getArray('tokenizer.ggml.token_type', 'i32').length, 512);
  assert.equal(f.tensors.length, 2 + 9 * 5);
  // Tensors tile the data section in order, each aligned, the last ending at the end of the file.
  let expect = f.dataStart;
  for (const x of f.tensors) {
    assert.equal(x.offset, expect, x.name);
    assert.equal(x.type, GGML.F32);
    expect += Math.ceil(x.bytes / f.alignment) * f.alignment;
  }
  assert.equal(expect, readFileSync(STORIES).length);
  const norm = dequantizeTensor(f.tensor('output_norm.weight'), f.tensorData('output_norm.weight'));
  assert.ok(norm.every(Number.isFinite) && norm.some((x) => x !== 0));
  assert.deepEqual(encodeGguf(modelToGgufInput(m)), new Uint8Array(readFileSync(STORIES)));
});

test('llama.cpp (node-llama-cpp) loads tiny llama models written by our writer', async (t) => {
  let getLlama: typeof import('node-llama-cpp').getLlama;
  try {
    ({ getLlama } = await import('node-llama-cpp'));
  } catch (e) {
    t.skip(`node-llama-cpp is not installed (${String(e)})`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-llamacpp-'));
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  try {
    const variants = [
      { weightType: 'f32' },
      { weightType: 'f16', separateOutput: true },
      { weightType: 'q8_0', kvHeads: 4 },
      { weightType: 'q4_0', layers: 1 },
    ];
    for (const v of variants) {
      const path = join(dir, `tiny-${v.weightType}.gguf`);
      writeGguf(path, tinyLlama(v));
      const model = await llama.loadModel({ modelPath: path });
      try {
        assert.equal(model.trainContextSize, 128, v.weightType);
        assert.equal(model.tokens.bos, 1);
        assert.equal(model.tokens.eos, 2);
        // The placeholder vocab tokenizes through byte fallback: 'hi' = <0x68> <0x69> = ids 3 + byte.
        assert.deepEqual([...model.tokenize('hi')].slice(-2), [3 + 0x68, 3 + 0x69]);
        const ctx = await model.createContext({ contextSize: 32 });
        try {
          // One decode step proves every tensor's shape and type was accepted for compute.
          const seq = ctx.getSequence();
          let produced = -1;
          for await (const tok of seq.evaluate([1, 5, 6] as never, { temperature: 0 })) {
            produced = Number(tok);
            break;
          }
          assert.ok(produced >= 0 && produced < 320, `decoded token ${produced}`);
        } finally {
          await ctx.dispose();
        }
      } finally {
        await model.dispose();
      }
    }
  } finally {
    await llama.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
