// FP16-cache reference logits, computed once per (model, prompts, horizon, reference policy) and stored as
// a hashed artifact that later runs reuse (llama-perplexity's --kl-divergence-base idea).
//
// Artifact layout (little-endian): 8 B magic "KVPKREF1", u32 header length H, H B JSON header (space-padded
// to 4-byte alignment), then each entry's logits as float32 [rows, vocab] in header order.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { writeAtomic } from '../io/atomic.js';
import { readFrame, writeFrame, type FrameSpec } from '../io/framed.js';
import { readWholeFile } from '../io/files.js';
import { join } from 'node:path';
import type { CachePolicy } from '../cache/policy.js';
import { FileFormatError } from '../errors.js';
import type { Model } from '../model/model.js';
import { f32Bytes, readF32 } from './arrays.js';
import { sha256 } from './hash.js';
import { runSequence } from './sequence.js';

export const REFERENCE_MAGIC = 'KVPKREF1';
/** Guards against a corrupt length field making us parse a huge "header". */
const MAX_REFERENCE_HEADER = 64 << 20;
const FRAME: FrameSpec = { kind: 'reference', magic: REFERENCE_MAGIC, maxHeader: MAX_REFERENCE_HEADER, pad: true };
/** The reference every scheme is compared with: f16 K/V everywhere, nothing special (seeds 000/002). */
export const REFERENCE_POLICY: CachePolicy = { k: 'f16', v: 'f16', window: 0, sinks: 0 };

export interface EvalPrompt {
  readonly id: string;
  readonly tokens: readonly number[];
}

export interface ReferenceEntry {
  readonly prompt: EvalPrompt;
  /** The reference's greedy continuation (horizon tokens). */
  readonly continuation: number[];
  /** [prompt + horizon - 1, vocab] */
  readonly logits: Float32Array;
}

export interface ReferenceKey {
  /** sha256 of the model file (or any stable model identity). */
  readonly model: string;
  readonly policy: CachePolicy;
  readonly horizon: number;
  readonly prompts: readonly EvalPrompt[];
}

/** A reference without its logits: what scoring from saved digests reads (reference-digest.ts saves it). */
export interface ReferenceMeta {
  readonly key: string;
  readonly spec: ReferenceKey;
  readonly vocab: number;
  readonly entries: readonly Omit<ReferenceEntry, 'logits'>[];
}

export interface ReferenceSet {
  /** sha256 of the canonical key JSON: the artifact's name. */
  readonly key: string;
  readonly spec: ReferenceKey;
  readonly vocab: number;
  readonly entries: readonly ReferenceEntry[];
}

export function referenceKey(k: ReferenceKey): string {
  return sha256(JSON.stringify({ version: 1, model: k.model, policy: k.policy, horizon: k.horizon, prompts: k.prompts.map((p) => [p.id, p.tokens]) }));
}

/** Runs the reference policy over every prompt (greedy continuation + logits at every position). */
export function computeReference(model: Model, spec: ReferenceKey): ReferenceSet {
  const entries = spec.prompts.map((prompt) => {
    const r = runSequence(model, spec.policy, prompt.tokens, spec.horizon);
    return { prompt, continuation: r.continuation, logits: r.logits };
  });
  return { key: referenceKey(spec), spec, vocab: model.nVocab, entries };
}

type Header = ReturnType<typeof keyedHeader<'kvpack-reference'>>;

export function writeReference(r: ReferenceSet): Uint8Array {
  const data = f32Bytes(...r.entries.map((e) => e.logits));
  return writeFrame(FRAME, keyedHeader('kvpack-reference', r, data), [data]);
}

/** The header fields every saved reference form shares: its key, spec, continuations and the body's sha256. */
export function keyedHeader<F extends string>(format: F, r: ReferenceMeta, body: Uint8Array) {
  return {
    format,
    version: 1 as const,
    key: r.key,
    spec: r.spec,
    vocab: r.vocab,
    continuations: r.entries.map((e) => e.continuation),
    dataSha256: sha256(body),
  };
}

/** Reads a saved reference frame: format and version, the key recomputed from the spec, the body's sha256. */
export function readKeyedFrame<H extends ReturnType<typeof keyedHeader>>(frame: FrameSpec, format: string, bytes: Uint8Array): { h: H; data: Uint8Array } {
  const { header: h, body: data } = readFrame<H>(frame, bytes);
  if (h.format !== format || h.version !== 1) throw new FileFormatError(frame.kind, 'unsupported header');
  if (referenceKey(h.spec) !== h.key) throw new FileFormatError(frame.kind, 'key does not match the recorded spec');
  if (sha256(data) !== h.dataSha256) throw new FileFormatError(frame.kind, 'body does not match the recorded sha256');
  return { h, data };
}

/** Parses an artifact; the key is recomputed from the spec and the logits hash is checked. */
export function readReference(bytes: Uint8Array): ReferenceSet {
  const { h, data } = readKeyedFrame<Header>(FRAME, 'kvpack-reference', bytes);
  const lengths = h.spec.prompts.map((p) => (p.tokens.length + h.spec.horizon - 1) * h.vocab);
  const logits = readF32(data, ...lengths);
  return {
    key: h.key,
    spec: h.spec,
    vocab: h.vocab,
    entries: h.spec.prompts.map((prompt, i) => ({ prompt, continuation: h.continuations[i]!, logits: logits[i]! })),
  };
}

/** `<dir>/<key>.kvref`: reused when present (and valid), else computed and written atomically. */
export function loadOrComputeReference(model: Model, spec: ReferenceKey, dir: string): { ref: ReferenceSet; path: string; reused: boolean } {
  const key = referenceKey(spec);
  const path = join(dir, `${key}.kvref`);
  if (existsSync(path)) {
    const ref = readReference(new Uint8Array(readWholeFile(path, 'reference file')));
    if (ref.key === key && ref.vocab === model.nVocab) return { ref, path, reused: true };
  }
  const ref = computeReference(model, spec);
  mkdirSync(dir, { recursive: true });
  writeAtomic(path, writeReference(ref));
  return { ref, path, reused: false };
}

/**
 * sha256 of a model file: the model's identity in reference keys. A Hugging Face directory's identity is
 * the sha256 of its files' names and sha256s (sorted), so any changed weight, config or tokenizer file counts.
 */
export function modelSha256(path: string): string {
  if (!existsSync(path) || !statSync(path).isDirectory()) return sha256(readWholeFile(path, 'model file'));
  const files = readdirSync(path)
    .filter((f) => statSync(join(path, f)).isFile())
    .sort();
  return sha256(files.map((f) => `${f}\0${sha256(readWholeFile(join(path, f), 'model file'))}\n`).join(''));
}
