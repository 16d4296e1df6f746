// Hugging Face tokenizer semantics that llama.cpp's tokenizer.ggml.* keys cannot express: normalizer
// steps, the Metaspace pre-tokenizer, added-token flags and unknown-token fusing. A tokenizer built from
// tokenizer.json carries them in one JSON metadata key, so it encodes as transformers does; GGUF files
// without the key keep llama.cpp's rules (and llama.cpp ignores the key).
// The pipeline's shape and its key live in gguf/tokenizer-spec.ts, shared with hf/'s converter that writes it.
import { FileFormatError } from '../../errors.js';
import { HF_PIPELINE_KEY, type HfPipeline, type NormalizerStep } from '../../gguf/tokenizer-spec.js';
import { metaString, type TokenizerMetadata } from './metadata.js';

export { HF_PIPELINE_KEY, type AddedTokenFlags, type HfPipeline, type Metaspace, type NormalizerStep } from '../../gguf/tokenizer-spec.js';

const KIND = 'tokenizer metadata';
const FORMS = ['NFC', 'NFD', 'NFKC', 'NFKD'];

/** The pipeline stored under HF_PIPELINE_KEY, or undefined when the metadata has none. */
export function readHfPipeline(meta: TokenizerMetadata): HfPipeline | undefined {
  const text = metaString(meta, HF_PIPELINE_KEY);
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new FileFormatError(KIND, `${HF_PIPELINE_KEY} is not valid JSON`);
  }
  const bad = (what: string) => new FileFormatError(KIND, `${HF_PIPELINE_KEY}: ${what}`);
  const p = raw as HfPipeline;
  if (typeof p !== 'object' || p === null || !Array.isArray(p.normalizer) || !Array.isArray(p.addedTokens)) {
    throw bad('needs normalizer and addedTokens arrays');
  }
  for (const step of p.normalizer) {
    if (step.type === 'unicode' && !FORMS.includes(step.form)) throw bad(`unknown unicode form '${step.form}'`);
    if (!['prepend', 'replace', 'replaceRegex', 'unicode', 'lowercase', 'strip'].includes(step.type)) {
      throw bad(`unknown normalizer step '${(step as { type: string }).type}'`);
    }
  }
  for (const t of p.addedTokens) if (!Number.isInteger(t.id) || t.id < 0) throw bad(`added token id ${t.id}`);
  const ms = p.metaspace;
  if (ms && (typeof ms.replacement !== 'string' || ms.replacement.length === 0 || !['always', 'first', 'never'].includes(ms.prepend))) {
    throw bad('metaspace needs a replacement and prepend always|first|never');
  }
  return {
    normalizer: p.normalizer,
    metaspace: p.metaspace ?? null,
    addPrefixSpace: p.addPrefixSpace === true,
    addedTokens: p.addedTokens,
    ignoreMerges: p.ignoreMerges === true,
    byteFallback: p.byteFallback === true,
    fuseUnk: p.fuseUnk === true,
  };
}

/** The normalizer as one function; compiles regex steps once. */
export function normalizerOf(steps: readonly NormalizerStep[]): (text: string) => string {
  const fns = steps.map((s): ((t: string) => string) => {
    switch (s.type) {
      case 'prepend':
        return (t) => (t.length > 0 ? s.text + t : t);
      case 'replace':
        return (t) => t.replaceAll(s.from, s.to);
      case 'replaceRegex': {
        const re = new RegExp(s.pattern, 'gu');
        return (t) => t.replace(re, s.to);
      }
      case 'unicode':
        return (t) => t.normalize(s.form);
      case 'lowercase':
        return (t) => t.toLowerCase();
      case 'strip':
        return (t) => (s.left && s.right ? t.trim() : s.left ? t.trimStart() : s.right ? t.trimEnd() : t);
    }
  });
  return (text) => fns.reduce((t, f) => f(t), text);
}
