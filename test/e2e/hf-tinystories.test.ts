// The shared TinyStories-656K Hugging Face directory against tinystories-656k.gguf (the same model
// converted by llama.cpp's gguf-py): loading gives its tensors (names in its order, dims, types, bytes) and
// hyperparameter keys; `convert` writes them; greedy decoding from both gives the same tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schemePolicy } from '../../src/cache/schemes.js';
import { readGguf, type GgufFile } from '../../src/gguf/reader.js';
import { convertHfDir } from '../../src/hf/convert.js';
import { loadHfModel } from '../../src/hf/load.js';
import { readSafetensors } from '../../src/hf/safetensors.js';
import { loadModel, type Model } from '../../src/model/model.js';
import { fromRoot } from '../paths.js';

const DIR = fromRoot('..', 'shared', 'models', 'tinystories-656k');
const GGUF = fromRoot('..', 'shared', 'models', 'tinystories-656k.gguf');
const skip = existsSync(DIR) && existsSync(GGUF) ? false : `${DIR} or ${GGUF} not present`;
/** Greedy steps: long enough to leave the prompt far behind, a few ms on this model. */
const STEPS = 64;

/** Keys that describe the hyperparameters (not the tokenizer, not the free-form name). */
const hparamKeys = (keys: Iterable<string>) => [...keys].filter((k) => !k.startsWith('tokenizer.') && k !== 'general.name').sort();

function greedy(m: Model, prompt: number[]): number[] {
  const cache = m.createCache({ policy: schemePolicy('f16', { window: 0, sinks: 0 }), capacity: prompt.length + STEPS });
  const out: number[] = [];
  let row = m.forward(prompt, cache);
  for (let i = 0; i < STEPS; i++) {
    let best = 0;
    for (let j = 1; j < row.length; j++) if (row[j]! > row[best]!) best = j;
    out.push(best);
    row = m.forward([best], cache);
  }
  cache.dispose();
  return out;
}

function sameAsReference(ref: GgufFile, names: string[], get: (name: string) => { type: number; dims: readonly number[]; data: Uint8Array }): void {
  assert.deepEqual(
    names,
    ref.tensors.map((t) => t.name),
    'tensor names in the reference file order',
  );
  for (const t of ref.tensors) {
    const g = get(t.name);
    assert.deepEqual([g.type, [...g.dims]], [t.type, [...t.dims]], `${t.name}: type and dims`);
    assert.ok(Buffer.from(g.data).equals(Buffer.from(ref.tensorData(t.name))), `${t.name}: bytes`);
  }
}

test("tinystories-656k: the HF directory loads into the tensors and hparam keys of llama.cpp's GGUF", { skip }, () => {
  const ref = readGguf(GGUF);
  const m = loadHfModel(DIR);
  sameAsReference(ref, [...m.tensors.keys()], (n) => m.tensors.get(n)!);
  assert.deepEqual(hparamKeys(m.metadata.keys()), hparamKeys(ref.metadata.keys()));
  for (const k of hparamKeys(ref.metadata.keys())) assert.deepEqual(m.metadata.get(k), ref.metadata.get(k), k);
  // Negative control: q is stored in HF's rotate-half order, so copying it as stored would not match.
  const st = readSafetensors(join(DIR, 'model.safetensors')).tensors.get('model.layers.0.self_attn.q_proj.weight')!;
  assert.ok(!Buffer.from(st.source.read(st.offset, st.nbytes)).equals(Buffer.from(ref.tensorData('blk.0.attn_q.weight'))));
});

test("tinystories-656k: convert writes the reference GGUF's tensors; greedy tokens equal the reference's", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-conv-'));
  try {
    const out = join(dir, 'ts.gguf');
    convertHfDir(DIR, out);
    const ref = readGguf(GGUF);
    const ours = readGguf(out);
    sameAsReference(
      ref,
      ours.tensors.map((t) => t.name),
      (n) => ({ ...ours.tensor(n), data: ours.tensorData(n) }),
    );
    for (const k of hparamKeys(ref.metadata.keys())) assert.deepEqual(ours.metadata.get(k), ref.metadata.get(k), k);

    // Token ids (the tokenizer may not be converted): BOS, then BOS + a few story tokens from the reference.
    const refModel = loadModel(GGUF);
    const fromDir = loadModel(DIR);
    const fromConverted = loadModel(out);
    assert.equal(fromDir.source, 'hf');
    for (const prompt of [[1], [1, ...greedy(refModel, [1]).slice(0, 5)]]) {
      const want = greedy(refModel, prompt);
      assert.deepEqual(greedy(fromDir, prompt), want, `prompt ${prompt}`);
      assert.deepEqual(greedy(fromConverted, prompt), want, `prompt ${prompt} (converted file)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
