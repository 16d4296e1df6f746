// hfTokenizerMetadata on the shared TinyStories-656K directory: the entries equal those gguf-py wrote
// into tinystories-656k.gguf, and the tokenizer encodes story text as Hugging Face's JS tokenizer does.
// Malformed files give typed one-line errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { fromRoot } from '../../test/paths.js';
import { FileFormatError, type KvpackError, UnsupportedTokenizerError } from '../errors.js';
import { readGguf } from '../gguf/reader.js';
import { createTokenizer, HF_PIPELINE_KEY } from '../model/tokenizer/index.js';
import { byteLevelFixture } from '../../test/fixtures/hf-tokenizer.js';
import { hfTokenizerMetadata, hfTokenizerMetadataFromJson } from './tokenizer-json.js';

const DIR = fromRoot('..', 'shared', 'models', 'tinystories-656k');
const GGUF = fromRoot('..', 'shared', 'models', 'tinystories-656k.gguf');
const MISSING = !existsSync(join(DIR, 'tokenizer.json')) || !existsSync(GGUF);
const SKIP = MISSING ? '../shared/models/tinystories-656k{/,.gguf} not present' : false;

// Stories with what a tokenizer must get right: runs of spaces, newlines, punctuation, characters the
// 2048-token vocab lacks (no byte tokens here, so they fall back to a fused <unk>), and the story markers.
const TEXTS = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park.',
  'One day, Tim saw a big red ball.\n"Can I play?" he asked.\n\nHis mom said, "Yes, but be careful!"',
  "The dog's name was Spot; it wasn't scared. They'll play again tomorrow, won't they?",
  '  Two  spaces   and three.   Trailing   ',
  'Sue had 3 cats and 12 fish: 42 pets? No - just 15!',
  'Zoë and José ate crème brûlée at the café. 日本 🐶 “quotes” — dash… end',
  '<|start_story|>Once upon a time, there was a bunny.<|end_story|>',
  'The end. <|end_story|> <|start_story|>Lily and Ben went to the zoo.',
  'A story <unk> with an unknown marker and <|not_a_token|> text.',
  '\n\nNew lines first\nthen\ttabs\tand\r\nwindows line ends.\n',
];

function files() {
  const read = (name: string) => JSON.parse(readFileSync(join(DIR, name), 'utf8'));
  return { tokenizer: read('tokenizer.json'), tokenizerConfig: read('tokenizer_config.json') };
}

test('tinystories-656k: metadata equals the tokenizer entries gguf-py wrote', { skip: SKIP }, () => {
  const ours = new Map(hfTokenizerMetadata(DIR));
  const theirs = readGguf(GGUF).metadata;
  const keys = [
    'tokenizer.ggml.model',
    'tokenizer.ggml.tokens',
    'tokenizer.ggml.scores',
    'tokenizer.ggml.token_type',
    'tokenizer.ggml.bos_token_id',
    'tokenizer.ggml.eos_token_id',
    'tokenizer.ggml.unknown_token_id',
    'tokenizer.ggml.add_bos_token',
    'tokenizer.ggml.add_eos_token',
  ];
  for (const key of keys) {
    const want = theirs.get(key);
    assert.ok(want, `${key} in the gguf`);
    const got = ours.get(key);
    assert.ok(got, `${key} in our metadata`);
    assert.equal(got.type, want.type, key);
    const norm = (v: unknown) => (ArrayBuffer.isView(v) ? Array.from(v as unknown as ArrayLike<number>) : v);
    assert.deepEqual(norm(got.value), norm(want.value), key);
    if (got.type === 'array' && want.type === 'array') assert.equal(got.itemType, want.itemType, key);
  }
  // Keys gguf-py left out stay defaults: no pre-tokenizer name for a SentencePiece-style vocab, prefix on.
  assert.equal(ours.has('tokenizer.ggml.pre'), false);
  assert.equal(ours.has('tokenizer.ggml.add_space_prefix'), false);
});

test('tinystories-656k: encodes story text as @huggingface/tokenizers', { skip: SKIP }, () => {
  const f = files();
  const oracle = new HfTokenizer(f.tokenizer, f.tokenizerConfig);
  const ours = createTokenizer(new Map(hfTokenizerMetadata(DIR)));
  for (const text of TEXTS) {
    assert.deepEqual(ours.encode(text, { parseSpecial: true }), oracle.encode(text).ids, JSON.stringify(text));
    assert.deepEqual(ours.encode(text, { parseSpecial: true, addSpecial: false }), oracle.encode(text, { add_special_tokens: false }).ids);
  }
  // Characters outside the vocab: one fused <unk> per run, as the BPE model's fuse_unk says.
  assert.deepEqual(ours.encode('日本語', { addSpecial: false }).filter((id) => id === 0).length, 1);
});

test('tinystories-656k: the HF rules are what make it agree (negative control)', { skip: SKIP }, () => {
  const f = files();
  const oracle = new HfTokenizer(f.tokenizer, f.tokenizerConfig);
  // The same tokenizer.ggml.* entries without the pipeline key: llama.cpp's rules, as for the .gguf.
  const llamaCpp = createTokenizer(new Map(hfTokenizerMetadata(DIR).filter(([k]) => k !== HF_PIPELINE_KEY)));
  const differs = TEXTS.filter((t) => llamaCpp.encode(t, { parseSpecial: true }).join() !== oracle.encode(t).ids.join());
  assert.ok(differs.length >= 2, `special-token and <unk> texts differ under llama.cpp's rules (${differs.length})`);
});

test('tinystories-656k: decode round-trips text the vocab covers', { skip: SKIP }, () => {
  const f = files();
  const oracle = new HfTokenizer(f.tokenizer, f.tokenizerConfig);
  const ours = createTokenizer(new Map(hfTokenizerMetadata(DIR)));
  for (const text of TEXTS.filter((t) => !/[^\x20-\x7e\n]|<\|/.test(t))) {
    const ids = ours.encode(text);
    assert.equal(ours.decode(ids, { cleanSpaces: false }), text.replaceAll('\r', '').replaceAll('\t', ''));
    assert.equal(ours.decode(ids, { cleanSpaces: false }), oracle.decode(ids, { skip_special_tokens: true }));
  }
  const ids = ours.encode('<|start_story|>Tim ran.<|end_story|>', { parseSpecial: true });
  assert.equal(ours.decode(ids, { special: true, cleanSpaces: false }), '<|start_story|><|start_story|>Tim ran.<|end_story|>');
});

// ---- malformed input -----------------------------------------------------------------------------

function withDir(contents: Record<string, string>, fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-tok-'));
  try {
    for (const [name, text] of Object.entries(contents)) writeFileSync(join(dir, name), text);
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function assertOneLine(fn: () => unknown, type: new (...a: never[]) => KvpackError, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `${String(e)} is a ${type.name}`);
    assert.match(e.message, pattern);
    assert.equal(e.message.includes('\n'), false, 'one line');
    return true;
  });
}

const base = () => byteLevelFixture({ pre: 'gpt-2', merges: 20, specials: [], bos: null, eos: '<|endoftext|>' }).tokenizer;

test('malformed directories and files give typed one-line errors', () => {
  withDir({}, (dir) => assertOneLine(() => hfTokenizerMetadata(dir), FileFormatError, /no tokenizer\.json/));
  withDir({ 'tokenizer.json': '{"model": {"type": "BPE",' }, (dir) =>
    assertOneLine(() => hfTokenizerMetadata(dir), FileFormatError, /tokenizer\.json: not valid JSON/),
  );
  withDir({ 'tokenizer.json': JSON.stringify(base()), 'tokenizer_config.json': '[1, 2' }, (dir) =>
    assertOneLine(() => hfTokenizerMetadata(dir), FileFormatError, /tokenizer_config\.json: not valid JSON/),
  );
  withDir({ 'tokenizer.json': JSON.stringify({ version: '1.0', added_tokens: [] }) }, (dir) =>
    assertOneLine(() => hfTokenizerMetadata(dir), FileFormatError, /missing "model"/),
  );
});

test('unsupported models, normalizers and pre-tokenizers are refused by name', () => {
  const meta = (edit: (t: Record<string, unknown>) => void) => () => {
    const t = base() as Record<string, unknown>;
    edit(t);
    return hfTokenizerMetadataFromJson({ tokenizer: t });
  };
  assertOneLine(
    meta((t) => (t.model = { type: 'Unigram', vocab: [] })),
    UnsupportedTokenizerError,
    /model type 'Unigram'/,
  );
  assertOneLine(
    meta((t) => (t.model = { type: 'WordPiece', vocab: {} })),
    UnsupportedTokenizerError,
    /model type 'WordPiece'/,
  );
  assertOneLine(
    meta((t) => (t.normalizer = { type: 'BertNormalizer' })),
    UnsupportedTokenizerError,
    /normalizer 'BertNormalizer'/,
  );
  assertOneLine(
    meta((t) => (t.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Precompiled', precompiled_charsmap: '' }] })),
    UnsupportedTokenizerError,
    /normalizer 'Precompiled'/,
  );
  assertOneLine(
    meta((t) => (t.pre_tokenizer = { type: 'Whitespace' })),
    UnsupportedTokenizerError,
    /pre-tokenizer 'Whitespace'/,
  );
  // A Split regex that is none of the ones the engine runs must not silently run as another.
  const odd = String.raw`\p{N}{1,5}|[^\s\p{L}]+`;
  assertOneLine(
    meta(
      (t) =>
        (t.pre_tokenizer = {
          type: 'Sequence',
          pretokenizers: [
            { type: 'Split', pattern: { Regex: odd }, behavior: 'Isolated' },
            { type: 'ByteLevel', use_regex: false },
          ],
        }),
    ),
    UnsupportedTokenizerError,
    /pre-tokenizer regex '\\p\{N\}\{1,5\}/,
  );
  assertOneLine(
    meta((t) => (t.pre_tokenizer = null)),
    UnsupportedTokenizerError,
    /BPE without ByteLevel/,
  );
  assertOneLine(
    meta((t) => ((t.model as Record<string, unknown>).merges = [42])),
    FileFormatError,
    /merges\[0\]/,
  );
  assertOneLine(
    meta((t) => ((t.model as Record<string, unknown>).vocab = { a: -1 })),
    FileFormatError,
    /model\.vocab\['a'\]/,
  );
  assertOneLine(
    meta((t) => (t.added_tokens = [{ content: 'x' }])),
    FileFormatError,
    /added_tokens\[0\]/,
  );
  assertOneLine(() => hfTokenizerMetadataFromJson({ tokenizer: [] }), FileFormatError, /not a JSON object/);
});

test('special ids come from tokenizer_config, config.json and generation_config.json in that order', () => {
  const t = byteLevelFixture({
    pre: 'qwen2',
    merges: 20,
    specials: [
      { content: '<|endoftext|>', special: true },
      { content: '<|im_end|>', special: true },
    ],
    bos: null,
    eos: '<|im_end|>',
  }).tokenizer;
  const id = (c: string) => (t.added_tokens as { id: number; content: string }[]).find((a) => a.content === c)!.id;
  const get = (m: [string, { value: unknown }][], k: string) => m.find(([key]) => key === k)?.[1].value;
  const fromConfig = hfTokenizerMetadataFromJson({ tokenizer: t, tokenizerConfig: { eos_token: '<|im_end|>', pad_token: '<|endoftext|>' } });
  assert.equal(get(fromConfig, 'tokenizer.ggml.eos_token_id'), id('<|im_end|>'));
  assert.equal(get(fromConfig, 'tokenizer.ggml.padding_token_id'), id('<|endoftext|>'));
  assert.equal(get(fromConfig, 'tokenizer.ggml.bos_token_id'), undefined);
  // generation_config.json's list of EOS ids: the first is the EOS.
  const fromGen = hfTokenizerMetadataFromJson({
    tokenizer: t,
    generationConfig: { bos_token_id: id('<|endoftext|>'), eos_token_id: [id('<|endoftext|>'), id('<|im_end|>')] },
  });
  assert.equal(get(fromGen, 'tokenizer.ggml.bos_token_id'), id('<|endoftext|>'));
  assert.equal(get(fromGen, 'tokenizer.ggml.eos_token_id'), id('<|endoftext|>'));
  assert.equal(get(fromGen, 'tokenizer.ggml.add_bos_token'), false);
  const withTemplate = hfTokenizerMetadataFromJson({ tokenizer: t, tokenizerConfig: { chat_template: '{{ messages }}' } });
  assert.equal(get(withTemplate, 'tokenizer.chat_template'), '{{ messages }}');
  // config.json may ask for more rows than the tokenizer has: padded as llama.cpp does.
  const padded = hfTokenizerMetadataFromJson({ tokenizer: t, config: { vocab_size: id('<|im_end|>') + 3 } });
  const tokens = get(padded, 'tokenizer.ggml.tokens') as string[];
  assert.equal(tokens.length, id('<|im_end|>') + 3);
  assert.equal(tokens.at(-1), `[PAD${tokens.length - 1}]`);
  assert.equal((get(padded, 'tokenizer.ggml.token_type') as Int32Array).at(-1), 5);
});
