// The f16 reference as the model protocols save it: per row the reference's own logit digest (log-probs at its
// top-k ids normalised by the exact full-vocabulary log-sum-exp, the tail mass, the target, the argmax), not
// the vocabulary: ~k / vocab of the float32 logits. Every KL stays exact: each arm's full-vocabulary KL per
// row is computed at run time from the float32 logits and saved (kl/); the audit re-pools those rows and
// bounds each from below by the digests. The float32 logits' sha256 is recorded so a re-run can match them.
//
// Layout (framed.ts): 8 B magic "KVPKRFD1", u32 header length, JSON header, then each prompt's digest as
// float32 [rows, k + 3] in header order (rows = prompt + horizon - 1).
import { writeFrame, type FrameSpec } from '../io/framed.js';
import { f32Bytes, readF32 } from './arrays.js';
import { referenceDigests } from './eval.js';
import { sha256 } from './hash.js';
import { digestWidth } from './logit-digest.js';
import { keyedHeader, readKeyedFrame, type ReferenceMeta, type ReferenceSet } from './reference-logits.js';

export const REFERENCE_DIGEST_MAGIC = 'KVPKRFD1';
const FRAME: FrameSpec = { kind: 'reference digest', magic: REFERENCE_DIGEST_MAGIC, maxHeader: 64 << 20, pad: true };

export interface SavedReference extends ReferenceMeta {
  /** Reference ids each digest row keeps before its tail bucket (min(topK, vocab)). */
  readonly k: number;
  /** Per prompt, float32 [rows, k + 3] (logit-digest.ts). */
  readonly digests: readonly Float32Array[];
  /** sha256 of the float32 reference logits the digests came from (not saved: a re-run compares it). */
  readonly logitsSha256: string;
}

interface Header extends ReturnType<typeof keyedHeader<'kvpack-reference-digest'>> {
  k: number;
  logitsSha256: string;
}

/** The saved form of a full reference, and the top ids the arms' digests must use (run time only). */
export function savedReference(ref: ReferenceSet, topK: number): { saved: SavedReference; ids: Int32Array[][] } {
  const { ids, digests } = referenceDigests(ref, topK);
  const saved: SavedReference = {
    key: ref.key,
    spec: ref.spec,
    vocab: ref.vocab,
    entries: ref.entries.map((e) => ({ prompt: e.prompt, continuation: e.continuation })),
    k: Math.min(topK, ref.vocab),
    digests,
    logitsSha256: sha256(f32Bytes(...ref.entries.map((e) => e.logits))),
  };
  return { saved, ids };
}

export function writeSavedReference(r: SavedReference): Uint8Array {
  const data = f32Bytes(...r.digests);
  const header: Header = { ...keyedHeader('kvpack-reference-digest', r, data), k: r.k, logitsSha256: r.logitsSha256 };
  return writeFrame(FRAME, header, [data]);
}

/** Parses a saved reference; the key is recomputed from the spec and the digest bytes' hash is checked. */
export function readSavedReference(bytes: Uint8Array): SavedReference {
  const { h, data } = readKeyedFrame<Header>(FRAME, 'kvpack-reference-digest', bytes);
  const W = digestWidth(h.k);
  const digests = readF32(data, ...h.spec.prompts.map((p) => (p.tokens.length + h.spec.horizon - 1) * W));
  return {
    key: h.key,
    spec: h.spec,
    vocab: h.vocab,
    entries: h.spec.prompts.map((prompt, i) => ({ prompt, continuation: h.continuations[i]! })),
    k: h.k,
    digests,
    logitsSha256: h.logitsSha256,
  };
}
