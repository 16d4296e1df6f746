// Special token ids, add_bos/add_eos and the chat template, found where gguf-py's SpecialVocab looks:
// tokenizer_config.json (then special_tokens_map.json) names each token, config.json and
// generation_config.json give ids, and the post-processor template says what encode() adds.
import { gv, type GgufValue } from '../gguf/values.js';

type Json = Record<string, unknown>;

/** Special token kinds and the GGUF key of each (llama.cpp's spelling, "seperator" included). */
export const SPECIAL_KEYS = {
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  unk: 'tokenizer.ggml.unknown_token_id',
  sep: 'tokenizer.ggml.seperator_token_id',
  pad: 'tokenizer.ggml.padding_token_id',
  cls: 'tokenizer.ggml.cls_token_id',
  mask: 'tokenizer.ggml.mask_token_id',
} as const;
type Kind = keyof typeof SPECIAL_KEYS;

export interface SpecialSources {
  readonly tokenizer: Json;
  readonly tokenizerConfig?: Json;
  readonly specialTokensMap?: Json;
  readonly config?: Json;
  readonly generationConfig?: Json;
  /** chat_template.jinja, used when tokenizer_config.json has no chat_template. */
  readonly chatTemplate?: string;
}

/** A token named by text (a string or an AddedToken-like `{ content }`). */
function tokenName(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (typeof entry === 'object' && entry !== null && typeof (entry as Json).content === 'string') return (entry as Json).content as string;
  return undefined;
}

function firstId(v: unknown): number | undefined {
  const x = Array.isArray(v) ? v[0] : v;
  return Number.isInteger(x) && (x as number) >= 0 ? (x as number) : undefined;
}

/** `tokenizer.ggml.*_token_id`, `add_bos_token`, `add_eos_token` and chat template entries. */
export function specialEntries(src: SpecialSources, idOf: (text: string) => number | undefined, nVocab: number): [string, GgufValue][] {
  const tc = src.tokenizerConfig ?? {};
  const stm = src.specialTokensMap ?? {};
  const named = (kind: Kind) => tokenName(tc[`${kind}_token`]) ?? tokenName(stm[`${kind}_token`]);
  const names: Partial<Record<Kind, string>> = {};
  for (const kind of Object.keys(SPECIAL_KEYS) as Kind[]) {
    const n = named(kind);
    if (n !== undefined) names[kind] = n;
  }
  // SpecialVocab: a CLS stands in for a missing BOS, a SEP for a missing EOS.
  names.bos ??= names.cls;
  names.eos ??= names.sep;
  const template = postProcessorAdds(src.tokenizer.post_processor);
  names.bos ??= template.first;

  const out: [string, GgufValue][] = [];
  for (const kind of Object.keys(SPECIAL_KEYS) as Kind[]) {
    const byName = names[kind] !== undefined ? idOf(names[kind]!) : undefined;
    const modelUnk = kind === 'unk' ? tokenName((src.tokenizer.model as Json | undefined)?.unk_token) : undefined;
    const id =
      byName ??
      firstId(src.config?.[`${kind}_token_id`]) ??
      firstId(src.generationConfig?.[`${kind}_token_id`]) ??
      (modelUnk !== undefined ? idOf(modelUnk) : undefined);
    if (id !== undefined && id < nVocab) out.push([SPECIAL_KEYS[kind], gv.u32(id)]);
  }

  const bosText = names.bos;
  const addBos = typeof tc.add_bos_token === 'boolean' ? tc.add_bos_token : template.first !== undefined && template.first === bosText;
  const addEos = typeof tc.add_eos_token === 'boolean' ? tc.add_eos_token : template.last !== undefined && template.last === names.eos;
  out.push(['tokenizer.ggml.add_bos_token', gv.bool(addBos || template.roberta)]);
  out.push(['tokenizer.ggml.add_eos_token', gv.bool(addEos || template.roberta)]);

  out.push(...chatTemplates(tc.chat_template ?? src.chatTemplate));
  return out;
}

/** What the post-processor puts around a single sequence. */
function postProcessorAdds(pp: unknown): { first?: string; last?: string; roberta: boolean } {
  if (typeof pp !== 'object' || pp === null) return { roberta: false };
  const p = pp as Json;
  const list = Array.isArray(p.processors) ? (p.processors as Json[]) : [p];
  const out: { first?: string; last?: string; roberta: boolean } = { roberta: false };
  for (const proc of list) {
    if (proc.type === 'RobertaProcessing' || proc.type === 'BertProcessing') out.roberta = true;
    if (proc.type !== 'TemplateProcessing' || !Array.isArray(proc.single)) continue;
    const single = proc.single as Json[];
    const special = (e: Json | undefined) => {
      const id = (e?.SpecialToken as Json | undefined)?.id;
      return typeof id === 'string' ? id : undefined;
    };
    // gguf-py reads the template only when it has more than the sequence itself.
    if (single.length > 1) {
      const first = special(single[0]);
      const last = special(single.at(-1));
      if (first !== undefined) out.first = first;
      if (last !== undefined) out.last = last;
    }
  }
  return out;
}

function chatTemplates(t: unknown): [string, GgufValue][] {
  if (typeof t === 'string') return [['tokenizer.chat_template', gv.str(t)]];
  if (!Array.isArray(t)) return [];
  // A list of named templates: 'default' is the chat template, the others keep their names.
  const out: [string, GgufValue][] = [];
  for (const e of t as Json[]) {
    if (typeof e?.name !== 'string' || typeof e.template !== 'string') continue;
    out.push([e.name === 'default' ? 'tokenizer.chat_template' : `tokenizer.chat_template.${e.name}`, gv.str(e.template)]);
  }
  return out;
}
