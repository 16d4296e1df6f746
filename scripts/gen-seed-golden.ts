// Writes test/golden/seed/<id>.json: frozen encode/decode vectors for the non-ggml packed formats.
// Run once (npx tsx scripts/gen-seed-golden.ts) after a deliberate format change, then review the diff.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encode, decode } from '../src/formats/codec.js';
import { getFormat } from '../src/formats/registry.js';
import { SEED_FORMAT_IDS, seedCases } from '../test/golden/seed-cases.js';
import { fromRoot } from '../test/paths.js';

const bitsHex = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)].map((u) => u.toString(16).padStart(8, '0'));

const dir = fromRoot('test', 'golden', 'seed');
mkdirSync(dir, { recursive: true });
for (const id of SEED_FORMAT_IDS) {
  const f = getFormat(id);
  const cases = seedCases(f.blockValues).map(({ name, values }) => {
    const bytes = encode(id, values);
    return {
      name,
      n: values.length,
      input: bitsHex(values),
      bytes: Buffer.from(bytes).toString('hex'),
      decoded: bitsHex(decode(id, bytes, values.length)),
    };
  });
  const head = { format: id, axis: f.axis, blockValues: f.blockValues, blockBytes: f.blockBytes };
  // One case per line keeps diffs readable without one line per float.
  const body = cases.map((c) => '  ' + JSON.stringify(c)).join(',\n');
  writeFileSync(join(dir, `${id}.json`), `${JSON.stringify(head).slice(0, -1)},\n "cases": [\n${body}\n]}\n`);
  console.log(`${id}: ${cases.length} cases`);
}
