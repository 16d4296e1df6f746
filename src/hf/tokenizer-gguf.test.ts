// The metadata from tokenizer.json written into a GGUF: our reader gives back a tokenizer that encodes the
// same, and llama.cpp (node-llama-cpp, vocab only) loads the file and tokenizes plain text as we do.
// llama.cpp ignores tokenizer.hf.pipeline, so text with added tokens follows its own rules there, and it
// runs SentencePiece-style vocabs by score, not by merges (they agree on this text).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromRoot } from '../../test/paths.js';
import { readGguf } from '../gguf/reader.js';
import { gv, type GgufValue } from '../gguf/values.js';
import { writeGguf } from '../gguf/writer.js';
import { SAMPLES } from '../../test/fixtures/tokenizer.js';
import { llamaCppVocabLoader } from '../../test/fixtures/tokenizer-gguf.js';
import { createTokenizer } from '../model/tokenizer/index.js';
import { byteLevelFixture, spmFixture, type HfFixture } from '../../test/fixtures/hf-tokenizer.js';
import { hfTokenizerMetadata, hfTokenizerMetadataFromJson } from './tokenizer-json.js';

const TINY = fromRoot('..', 'shared', 'models', 'tinystories-656k');

// llama.cpp reads these hparams before the vocab even when only the vocab is wanted.
const HPARAMS: [string, GgufValue][] = [
  ['general.architecture', gv.str('llama')],
  ['llama.context_length', gv.u32(128)],
  ['llama.embedding_length', gv.u32(8)],
  ['llama.block_count', gv.u32(1)],
  ['llama.feed_forward_length', gv.u32(16)],
  ['llama.attention.head_count', gv.u32(2)],
  ['llama.rope.dimension_count', gv.u32(4)],
  ['llama.attention.layer_norm_rms_epsilon', gv.f32(1e-5)],
];

const fromFixture = (f: HfFixture) => hfTokenizerMetadataFromJson({ tokenizer: f.tokenizer, tokenizerConfig: f.tokenizerConfig });
const VOCABS: [string, () => [string, GgufValue][] | undefined][] = [
  ['tinystories-656k', () => (existsSync(join(TINY, 'tokenizer.json')) ? hfTokenizerMetadata(TINY) : undefined)],
  ['llama2-style', () => fromFixture(spmFixture({ kind: 'llama2', merges: 300, specials: [] }))],
  [
    'gpt-2-style',
    () =>
      fromFixture(byteLevelFixture({ pre: 'gpt-2', merges: 300, specials: [{ content: '<|endoftext|>', special: true }], bos: null, eos: '<|endoftext|>' })),
  ],
  [
    'qwen2-style',
    () => fromFixture(byteLevelFixture({ pre: 'qwen2', merges: 300, specials: [{ content: '<|im_end|>', special: true }], bos: null, eos: '<|im_end|>' })),
  ],
  [
    'llama3-style',
    () =>
      fromFixture(
        byteLevelFixture({
          pre: 'llama-bpe',
          merges: 300,
          ignoreMerges: true,
          specials: [{ content: '<|begin_of_text|>', special: true }],
          bos: '<|begin_of_text|>',
          eos: '<|begin_of_text|>',
        }),
      ),
  ],
];

// Plain text without added tokens, normalizer-invariant (NFC already), that every vocab here covers
// either by its own pieces or by byte fallback.
const TEXTS = SAMPLES.filter((t) => !/<|\ufeff|\u0085/.test(t) && t === t.normalize('NFC') && t.length > 0);

test('tokenizer.json metadata survives a GGUF write and read, and llama.cpp tokenizes plain text alike', async (t) => {
  const load = await llamaCppVocabLoader();
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-gguf-'));
  try {
    for (const [name, make] of VOCABS) {
      const meta = make();
      if (meta === undefined) {
        t.diagnostic(`${name}: ../shared/models not present, skipped`);
        continue;
      }
      const path = join(dir, `${name}.gguf`);
      writeGguf(path, { metadata: [...HPARAMS, ...meta], tensors: [] });
      const direct = createTokenizer(new Map(meta));
      const reread = createTokenizer(readGguf(path).metadata);
      const model = typeof load === 'string' ? undefined : await load(path);
      // llama.cpp aborts the process (std::out_of_range) on a character a vocab without byte tokens lacks
      // (tinystories-656k has none): it only gets text such a vocab covers.
      const v = direct.vocab;
      const hasBytes = v.model !== 'llama' || v.types.includes(6);
      const covered = (text: string) => hasBytes || Array.from(text.replaceAll(' ', '\u2581')).every((c) => v.id(c) >= 0);
      let compared = 0;
      for (const text of TEXTS) {
        const ids = direct.encode(text, { addSpecial: false });
        assert.deepEqual(reread.encode(text, { addSpecial: false }), ids, `${name} reread ${JSON.stringify(text)}`);
        if (!model || !covered(text)) continue;
        assert.deepEqual(Array.from(model.tokenize(text, false)), ids, `${name} llama.cpp ${JSON.stringify(text)}`);
        compared++;
      }
      if (model) assert.ok(compared >= 10, `${name}: ${compared} texts compared with llama.cpp`);
      await model?.dispose();
    }
    if (typeof load === 'string') t.diagnostic(`llama.cpp part skipped: ${load}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
