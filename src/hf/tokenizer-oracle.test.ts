// Tokenizers built from synthetic tokenizer.json files (GPT-2, Qwen2, Llama 3, Llama 2 and Mistral
// layouts) against Hugging Face's own JS tokenizer (@huggingface/tokenizers, the library transformers.js
// encodes with), run offline on the same JSON objects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { createTokenizer, type Tokenizer } from '../model/tokenizer/index.js';
import { SAMPLES } from '../../test/fixtures/tokenizer.js';
import { Prng } from '../numeric/prng.js';
import { byteLevelFixture, spmFixture, type HfFixture } from '../../test/fixtures/hf-tokenizer.js';
import { hfTokenizerMetadataFromJson } from './tokenizer-json.js';

const STORIES = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.',
  'One day, Tom saw a big, red ball in the park.\n"Can I play with it?" he asked his mom.\n\nShe smiled and said, "Yes!"',
  "The cat's name was Mittens; she wasn't afraid of the dog. They'll be friends, won't they?",
  'Ben had 3 apples and 12 pears. He gave 2 to Sue, who said: "Thank you, Ben!"',
  'Zoë ate a crème brûlée at the café — naïve Ångström said “wow” … 日本の話 🐶🐱 end.',
];

/**
 * `specials`: added-token texts for random texts. Normalized ones (`normalized`) appear only after a
 * space: a bare one right after another match is where tokenizers.js departs from Rust tokenizers (it
 * takes a leftover piece equal to a token's raw text as that token; Rust, which we follow, does not).
 */
type Style = { name: string; fixture: HfFixture; specials: string[]; normalized?: string[]; pre?: string; model: string };

const STYLES: Style[] = [
  {
    name: 'GPT-2 (ByteLevel regex)',
    fixture: byteLevelFixture({ pre: 'gpt-2', merges: 300, specials: [{ content: '<|endoftext|>', special: true }], bos: null, eos: '<|endoftext|>' }),
    specials: ['<|endoftext|>'],
    pre: 'gpt-2',
    model: 'gpt2',
  },
  {
    name: 'Qwen2 (NFC, Split regex, added tokens)',
    fixture: byteLevelFixture({
      pre: 'qwen2',
      merges: 300,
      normalizer: { type: 'NFC' },
      specials: [
        { content: '<|endoftext|>', special: true },
        { content: '<|im_start|>', special: true },
        { content: '<|im_end|>', special: true },
        { content: '<tool_call>', special: false, normalized: false },
      ],
      bos: null,
      eos: '<|im_end|>',
    }),
    specials: ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<tool_call>'],
    pre: 'qwen2',
    model: 'gpt2',
  },
  {
    name: 'Llama 3 (Split regex, ignore_merges, BOS template)',
    fixture: byteLevelFixture({
      pre: 'llama-bpe',
      merges: 300,
      ignoreMerges: true,
      extraTokens: ['Once', ' upon', ' sunshine', 'ǅungla'],
      specials: [
        { content: '<|begin_of_text|>', special: true },
        { content: '<|end_of_text|>', special: true },
        { content: '<|eot_id|>', special: true },
        { content: '<|start_header_id|>', special: true, rstrip: true },
      ],
      bos: '<|begin_of_text|>',
      eos: '<|eot_id|>',
    }),
    specials: ['<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_of_text|>'],
    pre: 'llama-bpe',
    model: 'gpt2',
  },
  {
    name: 'SmolLM (Digits + ByteLevel)',
    fixture: byteLevelFixture({ pre: 'smollm', merges: 300, specials: [{ content: '<|im_end|>', special: true }], bos: null, eos: '<|im_end|>' }),
    specials: ['<|im_end|>'],
    pre: 'smollm',
    model: 'gpt2',
  },
  {
    name: 'Llama 2 (Prepend/Replace normalizer, byte fallback)',
    fixture: spmFixture({ kind: 'llama2', merges: 300, specials: [{ content: '<tool>', special: false, normalized: true }] }),
    specials: ['<s>', '</s>', '<unk>'],
    normalized: ['<tool>'],
    model: 'llama',
  },
  {
    name: 'Mistral (Metaspace prepend first, byte fallback)',
    fixture: spmFixture({
      kind: 'mistral',
      merges: 300,
      specials: [
        { content: '[INST]', special: true, normalized: false },
        { content: '[/INST]', special: true, normalized: false },
      ],
    }),
    specials: ['<s>', '</s>', '[INST]', '[/INST]'],
    model: 'llama',
  },
  {
    name: 'Gemma (Replace normalizer, no prefix, no-op Split)',
    fixture: spmFixture({ kind: 'gemma', merges: 300, specials: [{ content: '<start_of_turn>', special: true, normalized: false }] }),
    specials: ['<s>', '</s>', '<start_of_turn>'],
    model: 'llama',
  },
];

const PIECES = ['a', ' the', 'Lily', ' ', '  ', '\n', '\n\n', '\t', 'é', 'e\u0301', 'ß', '日本', '😀', '42', '12345', "'s", "'LL", '.', ',', '!?', '$'];

// Random concatenations of pieces and the style's specials: specials next to spaces, text and each other.
function randomTexts(seed: number, specials: readonly string[], normalized: readonly string[], count: number): string[] {
  const rng = new Prng(seed);
  const all = [...PIECES, ...specials, ...specials.map((s) => ' ' + s), ...specials.map((s) => s + ' '), ...normalized.map((s) => ' ' + s)];
  return Array.from({ length: count }, () => {
    let s = '';
    for (let n = 1 + rng.int(10); n > 0; n--) s += all[rng.int(all.length)];
    return s;
  });
}

function build(f: HfFixture): { ours: Tokenizer; oracle: HfTokenizer; meta: Map<string, unknown> } {
  const meta = new Map(hfTokenizerMetadataFromJson({ tokenizer: f.tokenizer, tokenizerConfig: f.tokenizerConfig }));
  return { ours: createTokenizer(meta), oracle: new HfTokenizer(f.tokenizer, f.tokenizerConfig), meta };
}

const value = (meta: Map<string, unknown>, key: string) => (meta.get(key) as { value: unknown } | undefined)?.value;

for (const style of STYLES) {
  test(`${style.name}: metadata names the model, pre-tokenizer and token types`, () => {
    const { meta, ours } = build(style.fixture);
    assert.equal(value(meta, 'tokenizer.ggml.model'), style.model);
    assert.equal(value(meta, 'tokenizer.ggml.pre'), style.pre);
    for (const a of style.fixture.tokenizer.added_tokens as { id: number; content: string; special: boolean }[]) {
      assert.equal(ours.tokenText(a.id), a.content);
      const type = ours.vocab.types[a.id];
      // <unk> is UNKNOWN (2); other special tokens CONTROL (3), the rest USER_DEFINED (4).
      assert.equal(type, a.content === '<unk>' ? 2 : a.special ? 3 : 4, a.content);
    }
  });

  test(`${style.name}: encodes as @huggingface/tokenizers`, () => {
    const { ours, oracle } = build(style.fixture);
    const texts = [...SAMPLES, ...STORIES, ...randomTexts(7, style.specials, style.normalized ?? [], 300)];
    for (const text of texts) {
      assert.deepEqual(ours.encode(text, { parseSpecial: true }), oracle.encode(text).ids, JSON.stringify(text));
    }
  });

  test(`${style.name}: decodes as @huggingface/tokenizers and round-trips text`, () => {
    const { ours, oracle } = build(style.fixture);
    const nfc = style.fixture.tokenizer.normalizer !== null && style.model === 'gpt2';
    const metaspace = (style.fixture.tokenizer.pre_tokenizer as { type?: string } | null)?.type === 'Metaspace';
    const added = [...style.specials, ...(style.normalized ?? [])];
    for (const text of [...SAMPLES, ...STORIES].filter((t) => t.length > 0)) {
      const ids = ours.encode(text, { addSpecial: false });
      const back = ours.decode(ids, { cleanSpaces: false });
      // Metaspace drops a leading space on decode whether or not encode added it (so does HF).
      const lossy = added.some((s) => text.includes(s)) || (metaspace && /^ /.test(text));
      if (!lossy) assert.equal(back, nfc ? text.normalize('NFC') : text, JSON.stringify(text));
      // tokenizers.js's ByteFallback decoder (TextDecoder without ignoreBOM) drops U+FEFF; Rust keeps it.
      if (style.model === 'llama' && text.includes('\ufeff')) continue;
      assert.equal(back, oracle.decode(ids, { skip_special_tokens: true }), JSON.stringify(text));
    }
  });
}

test('encoding ignores special tokens in text unless parseSpecial, and adds BOS/EOS as declared', () => {
  const { ours, oracle } = build(STYLES[1]!.fixture);
  const text = '<|im_start|>user\nhi<|im_end|>';
  const plain = ours.encode(text);
  const parsed = ours.encode(text, { parseSpecial: true });
  assert.deepEqual(parsed, oracle.encode(text).ids);
  assert.notDeepEqual(plain, parsed);
  assert.equal(ours.decode(plain), text, 'unparsed specials are plain text');
  // A non-special added token is matched either way, as transformers does.
  assert.ok(ours.encode('x<tool_call>y').includes(ours.vocab.id('<tool_call>')));
  const llama3 = build(STYLES[2]!.fixture);
  assert.equal(llama3.ours.encode('hi')[0], llama3.ours.vocab.id('<|begin_of_text|>'));
  assert.deepEqual(llama3.ours.encode('hi', { addSpecial: false }), llama3.oracle.encode('hi', { add_special_tokens: false }).ids);
  // No Prepend / Metaspace (Gemma): llama.cpp must be told not to add its space prefix.
  assert.equal(value(build(STYLES.at(-1)!.fixture).meta, 'tokenizer.ggml.add_space_prefix'), false);
  assert.equal(value(build(STYLES[0]!.fixture).meta, 'tokenizer.ggml.add_space_prefix'), undefined);
});

test('the pre-tokenizer chosen by regex text matters (negative control)', () => {
  // Qwen2's file run with GPT-2's named pre-tokenizer (punctuation apart from letters and newlines) must
  // disagree with the oracle somewhere in the texts the equality tests pass on.
  const f = STYLES[1]!.fixture;
  const meta = new Map(hfTokenizerMetadataFromJson({ tokenizer: f.tokenizer, tokenizerConfig: f.tokenizerConfig }));
  meta.set('tokenizer.ggml.pre', { type: 'string', value: 'gpt-2' });
  const wrong = createTokenizer(meta);
  const oracle = new HfTokenizer(f.tokenizer, f.tokenizerConfig);
  const differ = [...SAMPLES, ...STORIES].filter((t) => wrong.encode(t).join() !== oracle.encode(t).ids.join());
  assert.ok(differ.length >= 3, `${differ.length} texts differ`);
});
