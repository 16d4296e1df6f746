// tokenizer.json (parsed) -> the tokenizer.ggml.* entries llama.cpp's convert_hf_to_gguf.py writes, plus
// the HF pipeline key that makes our engine encode exactly as transformers. Pure: no file access, so the
// browser can use it on fetched JSON.
import { FileFormatError, UnsupportedTokenizerError } from '../errors.js';
import { gv, type GgufValue } from '../gguf/values.js';
import { HF_PIPELINE_KEY, TokenType, type AddedTokenFlags, type HfPipeline } from '../gguf/tokenizer-spec.js';
import { normalizerSteps, preTokenization, type PreTokenization } from './tokenizer-pipeline.js';
import { specialEntries, type SpecialSources } from './tokenizer-specials.js';

type Json = Record<string, unknown>;

/** The parsed files of a Hugging Face tokenizer; only `tokenizer` (tokenizer.json) is required. */
export interface HfTokenizerFiles extends Omit<SpecialSources, 'tokenizer'> {
  readonly tokenizer: unknown;
}

const WHERE = 'tokenizer.json';
const MODELS = ['BPE'];
const BYTE_TOKEN = /^<0x[0-9A-Fa-f]{2}>$/;

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  flags: AddedTokenFlags;
}

/** Entries for a GGUF (or createTokenizer) from parsed tokenizer files; typed errors for what we cannot run. */
export function hfTokenizerMetadataFromJson(files: HfTokenizerFiles): [string, GgufValue][] {
  const tok = files.tokenizer;
  if (typeof tok !== 'object' || tok === null || Array.isArray(tok)) throw new FileFormatError(WHERE, 'not a JSON object');
  const t = tok as Json;
  const model = t.model as Json | undefined;
  if (typeof model !== 'object' || model === null) throw new FileFormatError(WHERE, 'missing "model"');
  // Files from old tokenizers versions leave out the type of a BPE model.
  const type = model.type ?? (Array.isArray(model.merges) ? 'BPE' : undefined);
  if (type !== 'BPE') throw new UnsupportedTokenizerError(WHERE, 'model type', String(type), MODELS);
  for (const key of ['continuing_subword_prefix', 'end_of_word_suffix']) {
    if (typeof model[key] === 'string' && model[key] !== '') {
      throw new UnsupportedTokenizerError(WHERE, `BPE ${key}`, model[key] as string, ['none']);
    }
  }

  const normalizer = normalizerSteps(t.normalizer);
  const pre = preTokenization(t.pre_tokenizer, normalizer);
  const byteLevel = pre.kind === 'byteLevel';
  const spmStyle =
    !byteLevel && (model.byte_fallback === true || pre.kind === 'metaspace' || normalizer.some((s) => s.type === 'replace' && s.to === '\u2581'));
  if (!byteLevel && !spmStyle) {
    throw new UnsupportedTokenizerError(WHERE, 'BPE flavour', 'BPE without ByteLevel, Metaspace or byte_fallback', [
      'byte-level BPE (ByteLevel pre-tokenizer)',
      'SentencePiece-style BPE (byte_fallback or Metaspace)',
    ]);
  }

  const added = addedTokens(t.added_tokens);
  const vocabSize = Number.isInteger(files.config?.vocab_size) ? (files.config!.vocab_size as number) : 0;
  const { tokens, holes } = tokenTable(model.vocab, added, vocabSize);
  const merges = mergeList(model.merges);
  const addedById = new Map(added.map((a) => [a.id, a]));
  const ids = new Map<string, number>();
  tokens.forEach((s, i) => {
    if (!holes.has(i) && !ids.has(s)) ids.set(s, i);
  });
  const addedIds = new Map<string, number>();
  for (const a of added) if (!addedIds.has(a.content)) addedIds.set(a.content, a.id);
  const idOf = (text: string) => addedIds.get(text) ?? ids.get(text);
  const unkName = typeof model.unk_token === 'string' ? model.unk_token : undefined;
  const unkId = unkName !== undefined ? ids.get(unkName) : undefined;

  const types = new Int32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const a = addedById.get(i);
    if (holes.has(i)) types[i] = TokenType.unused;
    else if (spmStyle)
      types[i] =
        i === unkId
          ? TokenType.unknown
          : a
            ? a.special
              ? TokenType.control
              : TokenType.userDefined
            : BYTE_TOKEN.test(tokens[i]!)
              ? TokenType.byte
              : TokenType.normal;
    else types[i] = a ? (a.special || looksSpecial(a.content) ? TokenType.control : TokenType.userDefined) : TokenType.normal;
  }

  const out: [string, GgufValue][] = [['tokenizer.ggml.model', gv.str(spmStyle ? 'llama' : 'gpt2')]];
  if (pre.kind === 'byteLevel') out.push(['tokenizer.ggml.pre', gv.str(pre.pre)]);
  out.push(['tokenizer.ggml.tokens', gv.strings(tokens)]);
  if (spmStyle) out.push(['tokenizer.ggml.scores', gv.f32s(mergeScores(tokens, merges))]);
  out.push(['tokenizer.ggml.token_type', gv.i32s(types)]);
  out.push(['tokenizer.ggml.merges', gv.strings(merges)]);
  out.push(...specialEntries({ ...files, tokenizer: t }, idOf, tokens.length));
  if (spmStyle && !addsSpacePrefix(normalizer, pre)) out.push(['tokenizer.ggml.add_space_prefix', gv.bool(false)]);

  const pipeline: HfPipeline = {
    normalizer,
    metaspace: pre.kind === 'metaspace' ? pre.metaspace : null,
    addPrefixSpace: pre.kind === 'byteLevel' && pre.addPrefixSpace,
    addedTokens: added.map((a) => a.flags),
    ignoreMerges: model.ignore_merges === true,
    byteFallback: model.byte_fallback === true,
    fuseUnk: model.fuse_unk === true,
  };
  out.push([HF_PIPELINE_KEY, gv.str(JSON.stringify(pipeline))]);
  return out;
}

function addedTokens(raw: unknown): AddedToken[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new FileFormatError(WHERE, '"added_tokens" must be an array');
  return raw.map((e: Json, i) => {
    if (!Number.isInteger(e?.id) || (e.id as number) < 0 || typeof e.content !== 'string') {
      throw new FileFormatError(WHERE, `added_tokens[${i}] needs an integer id and a string content`);
    }
    const special = e.special === true;
    return {
      id: e.id as number,
      content: e.content,
      special,
      // tokenizers' default: special tokens are matched in the raw text, others in normalized text.
      flags: {
        id: e.id as number,
        normalized: typeof e.normalized === 'boolean' ? e.normalized : !special,
        lstrip: e.lstrip === true,
        rstrip: e.rstrip === true,
        singleWord: e.single_word === true,
        special,
      },
    };
  });
}

// Ids may leave holes (and config.json may ask for more rows than the tokenizer has): llama.cpp fills
// them with "[PAD<i>]" tokens of type UNUSED.
function tokenTable(vocab: unknown, added: readonly AddedToken[], minSize: number): { tokens: string[]; holes: Set<number> } {
  if (typeof vocab !== 'object' || vocab === null || Array.isArray(vocab)) throw new FileFormatError(WHERE, 'model.vocab must be an object of token -> id');
  const entries = Object.entries(vocab as Json);
  let n = minSize;
  for (const [s, id] of entries) {
    if (!Number.isInteger(id) || (id as number) < 0) throw new FileFormatError(WHERE, `model.vocab['${s}'] must be a non-negative integer id`);
    n = Math.max(n, (id as number) + 1);
  }
  for (const a of added) n = Math.max(n, a.id + 1);
  if (n === 0) throw new FileFormatError(WHERE, 'model.vocab is empty');
  const tokens = new Array<string | undefined>(n);
  for (const [s, id] of entries) tokens[id as number] = s;
  for (const a of added) tokens[a.id] = a.content;
  const holes = new Set<number>();
  for (let i = 0; i < n; i++) {
    if (tokens[i] === undefined) {
      tokens[i] = `[PAD${i}]`;
      holes.add(i);
    }
  }
  return { tokens: tokens as string[], holes };
}

// Merges as "left right" strings (gguf-py's form); pairs from newer files have any space inside a part
// spelled U+0120, as gguf-py does.
function mergeList(raw: unknown): string[] {
  if (!Array.isArray(raw)) throw new FileFormatError(WHERE, 'model.merges must be an array');
  return raw.map((m, i) => {
    if (typeof m === 'string') return m;
    if (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string') {
      return m.map((part: string) => part.replaceAll(' ', '\u0120')).join(' ');
    }
    throw new FileFormatError(WHERE, `model.merges[${i}] must be "a b" or ["a", "b"]`);
  });
}

/** SentencePiece-style scores: a token made by a merge scores minus that merge's rank, others 0. */
function mergeScores(tokens: readonly string[], merges: readonly string[]): Float32Array {
  const rank = new Map<string, number>();
  merges.forEach((m, r) => {
    const at = m.indexOf(' ', 1);
    const product = at < 0 ? m : m.slice(0, at) + m.slice(at + 1);
    if (!rank.has(product)) rank.set(product, r);
  });
  return Float32Array.from(tokens, (s) => {
    const r = rank.get(s);
    return r === undefined ? 0 : -r;
  });
}

// Does the text get a leading U+2581 (SentencePiece's dummy prefix)?
function addsSpacePrefix(normalizer: ReturnType<typeof normalizerSteps>, pre: PreTokenization): boolean {
  if (pre.kind === 'metaspace') return pre.metaspace.prepend !== 'never';
  return normalizer.some((s) => s.type === 'prepend' && s.text === '\u2581');
}

// convert_hf_to_gguf's does_token_look_special: added tokens some models forget to mark special.
function looksSpecial(text: string): boolean {
  return (
    ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text) ||
    (text.startsWith('<|') && text.endsWith('|>')) ||
    (text.startsWith('<\uff5c') && text.endsWith('\uff5c>')) ||
    (text.startsWith('<unused') && text.endsWith('>'))
  );
}
