// llama2.c checkpoints: header checks, size checks against the file, shared vs separate classifier,
// and the shared stories260K.bin converting to exactly llama.cpp's stories260K.gguf.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileFormatError } from '../errors.js';
import { convertLlama2c } from './convert.js';
import { llama2cFileBytes, llama2cFrom, readLlama2cConfig } from './llama2c.js';
import { loadLlama2c } from './llama2c-file.js';
import type { LoadedModel } from './model.js';
import { readGguf } from './reader.js';
import { memorySource } from './source.js';
import { GGML } from './types.js';
import { schemePolicy } from '../cache/schemes.js';
import { wasmFailure } from '../kernels/runtime/wasm.js';
import { modelFromLoaded } from '../model/model.js';
import { Prng } from '../numeric/prng.js';
import { spy } from '../../test/fixtures/spy-source.js';

function repoRoot(): URL {
  for (let u = new URL('./', import.meta.url); ; u = new URL('../', u)) {
    if (existsSync(new URL('package.json', u))) return u;
    if (u.pathname === '/') throw new Error(`no package.json above ${import.meta.url}`);
  }
}
const models = new URL('../shared/models/', repoRoot());
const BIN = new URL('stories260K.bin', models);
const GGUF = new URL('stories260K.gguf', models);

/** A synthetic checkpoint whose float k of the weights equals k, so each tensor's slice is identifiable. */
function checkpoint(h: number[], extraFloats = 0): Uint8Array {
  const [dim, hidden, layers, heads, kvHeads, vocab, seq] = h as [number, number, number, number, number, number, number];
  const cfg = {
    dim,
    hiddenDim: hidden,
    nLayers: layers,
    nHeads: heads,
    nKvHeads: kvHeads,
    vocabSize: Math.abs(vocab),
    seqLen: seq,
    sharedClassifier: vocab > 0,
  };
  const floats = (llama2cFileBytes(cfg) - 28) / 4 + extraFloats;
  const out = new Uint8Array(28 + 4 * floats);
  const dv = new DataView(out.buffer);
  h.forEach((x, i) => dv.setInt32(4 * i, x, true));
  for (let k = 0; k < floats; k++) dv.setFloat32(28 + 4 * k, k, true);
  return out;
}

function withFile<T>(bytes: Uint8Array, fn: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-l2c-'));
  try {
    const path = join(dir, 'm.bin');
    writeFileSync(path, bytes);
    return fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const firstFloat = (t: { data: Uint8Array }) => new DataView(t.data.buffer, t.data.byteOffset).getFloat32(0, true);

test('tensors come from llama2.c order: shared classifier', () => {
  // dim 8, hidden 12, 2 layers, 2 heads, 1 kv head, vocab 10, seq 4: head 4, kv dim 4.
  // Tensors stay in the file until read: inspect them while it exists.
  withFile(checkpoint([8, 12, 2, 2, 1, 10, 4]), (path) => sharedClassifierChecks(loadLlama2c(path)));
});

function sharedClassifierChecks(m: LoadedModel): void {
  assert.equal(m.arch, 'llama');
  assert.deepEqual([m.hparams.nEmbd, m.hparams.nHeadKv, m.hparams.headDim, m.hparams.nCtxTrain], [8, 1, 4, 4]);
  assert.equal(m.tensors.has('output.weight'), false);
  // Offsets (in floats): embd 80, rms_att 2x8, wq 2x64, wk 2x32, wv 2x32, wo 2x64, rms_ffn 2x8, w1 2x96, w2 2x96, w3 2x96, rms_final 8.
  const expect: [string, number, number[]][] = [
    ['token_embd.weight', 0, [8, 10]],
    ['blk.0.attn_norm.weight', 80, [8]],
    ['blk.1.attn_norm.weight', 88, [8]],
    ['blk.1.attn_q.weight', 96 + 64, [8, 8]],
    ['blk.0.attn_k.weight', 224, [8, 4]],
    ['blk.1.attn_v.weight', 288 + 32, [8, 4]],
    ['blk.0.attn_output.weight', 352, [8, 8]],
    ['blk.1.ffn_norm.weight', 480 + 8, [8]],
    ['blk.1.ffn_gate.weight', 496 + 96, [8, 12]],
    ['blk.0.ffn_down.weight', 688, [12, 8]],
    ['blk.1.ffn_up.weight', 880 + 96, [8, 12]],
    ['output_norm.weight', 1072, [8]],
  ];
  for (const [name, at, dims] of expect) {
    const t = m.tensors.get(name)!;
    assert.equal(t.type, GGML.F32);
    assert.deepEqual([firstFloat(t), t.dims], [at, dims], name);
  }
  assert.equal(m.tensors.size, 1 + 2 * 9 + 1);
}

test('negative vocab_size: a separate classifier after the RoPE tables', () => {
  withFile(checkpoint([8, 12, 1, 2, 2, -10, 4]), (path) => {
    const out = loadLlama2c(path).tensors.get('output.weight')!;
    assert.deepEqual(out.dims, [8, 10]);
    // embd 80 + 1 layer (8+64+32+32+64+8+96+96+96 = 496) + rms_final 8 + freq tables 2 x (4 x 2).
    assert.equal(firstFloat(out), 80 + 8 + 64 + 64 + 64 + 64 + 8 + 96 * 3 + 8 + 16);
  });
});

test('malformed checkpoints are FileFormatErrors naming the problem', () => {
  const bad = (bytes: Uint8Array, pattern: RegExp) =>
    withFile(bytes, (p) =>
      assert.throws(
        () => loadLlama2c(p),
        (e: unknown) => e instanceof FileFormatError && pattern.test(e.message),
      ),
    );
  bad(new Uint8Array(10), /shorter than the 28 B header/);
  bad(checkpoint([8, 12, 1, 2, 1, 10, 4]).slice(0, 500), /file is 500 B, the header \(shared classifier\) implies/);
  bad(checkpoint([8, 12, 1, 2, 1, 10, 4], 1), /implies/);
  bad(checkpoint([8, 12, 1, 2, 1, -10, 4]).slice(0, 28 + 4 * (80 + 488 + 8 + 8 + 16 - 88)), /implies/);
  const h = (x: number[]) => {
    const b = new Uint8Array(28);
    x.forEach((v, i) => new DataView(b.buffer).setInt32(4 * i, v, true));
    return b;
  };
  bad(h([0, 12, 1, 2, 1, 10, 4]), /dim = 0/);
  bad(h([8, 12, 1, 3, 1, 10, 4]), /not n_heads 3 x an even head size/);
  bad(h([8, 12, 1, 4, 3, 10, 4]), /n_kv_heads 3 does not divide n_heads 4/);
  bad(h([8, 12, 2 ** 30, 2, 1, 10, 4]), /n_layers = 1073741824 is outside/);
  bad(h([0x616b3432, 1, 0, 0, 0, 0, 0]), /versioned llama2.c export/);
  // The wrong classifier sign is named when the size fits the other layout.
  const sep = checkpoint([8, 12, 1, 2, 1, -10, 4]);
  new DataView(sep.buffer).setInt32(20, 10, true);
  bad(sep, /fits a separate classifier/);
});

const skipWasm = wasmFailure() ? `wasm kernels unavailable: ${wasmFailure()}` : false;

for (const expand of [false, true]) {
  test(`lazy load (expand ${expand}): only the header is read up front, then each matrix once, straight into the arena`, { skip: skipWasm }, () => {
    // dim 32, hidden 64, 2 layers, 4 heads (head 8), 2 kv heads, separate classifier of 48, seq 16; small random weights.
    const bytes = checkpoint([32, 64, 2, 4, 2, -48, 16]);
    const dv = new DataView(bytes.buffer);
    const rng = new Prng(3);
    for (let o = 28; o < bytes.length; o += 4) dv.setFloat32(o, 0.2 * rng.normal(), true);
    const src = spy(bytes);
    const loaded = llama2cFrom(src, 'spy');
    assert.deepEqual(src.reads, [[0, 28]], 'loading read the header only');
    assert.equal(src.intos.length, 0);
    const model = modelFromLoaded(loaded, { source: 'llama2c', expand });
    const matrices = [...loaded.tensors].filter(([, t]) => t.dims.length === 2);
    assert.equal(matrices.length, 1 + 2 * 7 + 1);
    assert.deepEqual(src.reads, [[0, 28]], 'no tensor-sized read() allocation');
    // Every tensor read exactly once; each matrix whole, into the (shared) arena. The weights are random,
    // so a tensor's bytes identify where in the file it was read from.
    assert.equal(src.intos.length, loaded.tensors.size);
    const eager = eagerCopy(loaded);
    for (const [name] of matrices) {
      const want = eager.tensors.get(name)!.data;
      const hits = src.intos.filter(([o, n]) => n === want.length && Buffer.compare(bytes.subarray(o, o + n), want) === 0);
      assert.deepEqual(
        hits.map(([, , shared]) => shared),
        [true],
        `${name}: one read into the arena`,
      );
    }
    // Same logits as the same tensors held as plain in-memory arrays.
    const ref = modelFromLoaded(eager, { source: 'llama2c', expand });
    const a = model.createCache({ policy: schemePolicy('f16', { window: 0, sinks: 0 }), capacity: 16 });
    const b = ref.createCache({ policy: schemePolicy('f16', { window: 0, sinks: 0 }), capacity: 16 });
    assert.deepEqual(model.forward([1, 5, 9, 40], a), ref.forward([1, 5, 9, 40], b));
    a.dispose();
    b.dispose();
  });
}

/** The pre-lazy loader's shape: every tensor copied into memory. */
function eagerCopy(m: LoadedModel): LoadedModel {
  return { ...m, tensors: new Map([...m.tensors].map(([k, t]) => [k, { type: t.type, dims: t.dims, data: t.data.slice() }])) };
}

test('a lazy tensor refuses reads outside itself', () => {
  const m = llama2cFrom(memorySource(checkpoint([8, 12, 1, 2, 1, 10, 4])), 'm');
  const t = m.tensors.get('blk.0.attn_q.weight')!;
  assert.equal(t.nbytes, 4 * 64);
  const part = new Uint8Array(8);
  t.readInto!(part, 248);
  assert.deepEqual(part, t.data.subarray(248));
  assert.throws(() => t.readInto!(new Uint8Array(8), 252), /outside tensor 'blk.0.attn_q.weight'/);
  assert.throws(() => t.readInto!(new Uint8Array(1), -1), /outside/);
});

test('header parse needs no more than the header', () => {
  const src = memorySource(checkpoint([8, 12, 1, 2, 1, 10, 4]).slice(0, 28));
  assert.equal(readLlama2cConfig(src).vocabSize, 10);
});

test("stories260K.bin converts to exactly llama.cpp's stories260K.gguf (no q/k permutation)", (t) => {
  if (!existsSync(BIN) || !existsSync(GGUF)) {
    t.skip('../shared/models/stories260K.{bin,gguf} not present');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-conv-'));
  try {
    const out = join(dir, 's.gguf');
    const model = convertLlama2c(fileURLToPath(BIN), out);
    assert.deepEqual([model.hparams.nEmbd, model.hparams.nLayer, model.hparams.nHead, model.hparams.nHeadKv, model.hparams.nVocab], [64, 5, 8, 4, 512]);
    const ours = readGguf(out);
    const ref = readGguf(fileURLToPath(GGUF));
    assert.deepEqual(
      ours.tensors.map((x) => [x.name, x.dims, x.type]),
      ref.tensors.map((x) => [x.name, x.dims, x.type]),
    );
    for (const x of ref.tensors) assert.deepEqual(ours.tensorData(x.name), ref.tensorData(x.name), x.name);
    // llama.cpp's q/k for llama2.c weights are unpermuted: the HF-style permutation would differ.
    const q = new Float32Array(ref.tensorData('blk.0.attn_q.weight').slice().buffer);
    const binQ = model.tensors.get('blk.0.attn_q.weight')!.data;
    const permuted = permuteRows(new Float32Array(binQ.slice().buffer), 8, 64);
    assert.notDeepEqual(permuted, q);
    // Metadata and layout too: the whole file is byte-identical to llama.cpp's writer's output.
    assert.deepEqual(readFileSync(out), readFileSync(GGUF));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** HF's q/k row permutation (per head: rows [0, 2, 4, ..., 1, 3, ...] from pairs), for the negative check. */
function permuteRows(w: Float32Array, heads: number, cols: number): Float32Array {
  const rows = w.length / cols;
  const per = rows / heads;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < per / 2; i++) {
      for (let s = 0; s < 2; s++) {
        out.set(w.subarray((h * per + 2 * i + s) * cols, (h * per + 2 * i + s + 1) * cols), (h * per + s * (per / 2) + i) * cols);
      }
    }
  }
  return out;
}
