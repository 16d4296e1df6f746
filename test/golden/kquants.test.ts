// K-quant dequantization against golden vectors produced by the real ggml inside node-llama-cpp
// (tools/golden/kquants_golden.c): random inputs -> quantize_row_*_ref bytes -> dequantize_row_* bits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { canDequantize, dequantize } from '../../src/kernels/matmul/dequant.js';
import { GGML, ggmlTypes } from '../../src/gguf/types.js';

/** Repo root: the first ancestor with package.json (works from test/ under tsx and from dist-test/test/). */
function repoRoot(): URL {
  for (let u = new URL('./', import.meta.url); ; u = new URL('../', u)) {
    if (existsSync(new URL('package.json', u))) return u;
    if (u.pathname === '/') throw new Error(`no package.json above ${import.meta.url}`);
  }
}
const goldenDir = new URL('test/golden/kquants/', repoRoot());

interface Golden {
  type: string;
  values: number;
  cases: { kind: string; bytes: string; output_bits: number[] }[];
}

for (const [name, id] of [['q4_K', GGML.Q4_K], ['q5_K', GGML.Q5_K], ['q6_K', GGML.Q6_K]] as const) {
  test(`${name} dequantize is bit-identical to ggml dequantize_row_${name}`, () => {
    const g = JSON.parse(readFileSync(new URL(`${name}.json`, goldenDir), 'utf8')) as Golden;
    assert.equal(g.type, name);
    // 7 quantized input kinds (zeros, constant, outliers, ...) plus raw random block bytes.
    assert.ok(g.cases.length >= 8);
    for (const c of g.cases) {
      const out = dequantize(id, Uint8Array.from(Buffer.from(c.bytes, 'hex')), g.values, `${name}/${c.kind}`);
      const bits = new Uint32Array(out.buffer);
      for (let i = 0; i < g.values; i++) {
        if (bits[i] !== c.output_bits[i]) assert.fail(`${name} case ${c.kind}: value ${i} bits ${bits[i]} != ggml ${c.output_bits[i]}`);
      }
    }
  });
}

test('ggml type table matches the real ggml (name, block size, type size)', () => {
  const g = JSON.parse(readFileSync(new URL('types.json', goldenDir), 'utf8')) as {
    types: { id: number; name: string; blockValues: number; blockBytes: number }[];
  };
  let checked = 0;
  for (const r of g.types) {
    const ours = ggmlTypes.get(r.id);
    if (r.blockValues === 0) {
      assert.equal(ours, undefined, `removed ggml type ${r.id} must not be in our table`);
      continue;
    }
    assert.ok(ours, `ggml type ${r.id} (${r.name}) missing from our table`);
    assert.deepEqual([ours.name, ours.blockValues, ours.blockBytes], [r.name, r.blockValues, r.blockBytes]);
    checked++;
  }
  assert.equal(checked, ggmlTypes.size, 'our table has ids ggml does not');
});

// The weight types that share bytes with kvpack KV formats, through dequantize() (the formats' decodeBlock).
for (const name of ['q4_0', 'q4_1', 'q5_0', 'q5_1', 'q8_0', 'iq4_nl', 'f16', 'bf16']) {
  test(`${name} weight dequantize is bit-identical to ggml`, (t) => {
    const id = [...ggmlTypes.values()].find((x) => x.name === name)!.id;
    if (!canDequantize(id)) {
      t.skip(`format '${name}' is not registered in src/formats/registry.ts yet`);
      return;
    }
    const g = JSON.parse(readFileSync(new URL(`weights_${name}.json`, goldenDir), 'utf8')) as { values: number; bytes: string; output_bits: number[] };
    const out = dequantize(id, Uint8Array.from(Buffer.from(g.bytes, 'hex')), g.values, name);
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < g.values; i++) {
      // NaN payloads are not preserved through JS numbers; only NaN-ness is compared.
      const want = new Float32Array(new Uint32Array([g.output_bits[i]!]).buffer)[0]!;
      if (Number.isNaN(want) && Number.isNaN(out[i])) continue;
      if (bits[i] !== g.output_bits[i]) assert.fail(`${name}: value ${i} = ${out[i]} (bits ${bits[i]}) != ggml ${want} (bits ${g.output_bits[i]})`);
    }
  });
}
