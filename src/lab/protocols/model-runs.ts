// Shared machinery of the model protocols (window-sweep, anchors, needles): the reference artifact, arms run
// through the engine with their logit digests saved (logit-digest.ts: k + 3 floats per row, not the
// vocabulary), negative controls, and the audit that rescores the saved files.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { CachePolicy } from '../../cache/policy.js';
import { ArgumentError, FileFormatError } from '../../errors.js';
import { loadModel, type Model } from '../../model/model.js';
import { f32Bytes, readF32 } from '../arrays.js';
import { CheckList, countFailures, near } from '../checks.js';
import { armDigest, exactKlRows, runArm, scoreDigests, type ArmScore, type EvalArm, type ModelShape, type PromptOutcome, type ScoredOutcome } from '../eval.js';
import { RunWriter } from '../manifest.js';
import type { RunOptions, RunResult } from '../protocol-types.js';
import { defaultPromptSet, type DefaultPromptSpec, type PromptSource } from '../prompts.js';
import { computeReference, modelSha256, REFERENCE_POLICY, type EvalPrompt, type ReferenceMeta } from '../reference-logits.js';
import { readSavedReference, savedReference, writeSavedReference, type SavedReference } from '../reference-digest.js';
import { num, nums, obj, str, isNonNegInt, isPosInt, type Json } from '../spec.js';
import { STORY_SETS, type StorySet } from '../story-openings.js';
import { digestWidth, klDigest } from '../logit-digest.js';
import { planLayers } from '../../cache/policy.js';
import { storeErrorOk } from '../stored-error.js';

export interface ModelEvalSpec {
  /** Default prompts (protocols that build their own, like needles, omit it). */
  readonly prompts?: DefaultPromptSpec;
  readonly horizon: number;
  readonly horizons: readonly number[];
  /** Logit metrics read the reference's top `topK` tokens plus a tail bucket per row (exact KL when >= vocab). */
  readonly topK: number;
  readonly controls: { readonly errorFloor: number };
  readonly tolerance: number;
}

export function parseModelEval(o: Json): ModelEvalSpec {
  const c = obj(o.controls, 'controls');
  return {
    prompts: o.prompts === undefined ? undefined : parsePromptSpec(o.prompts, 'prompts'),
    horizon: num(o, 'horizon', isPosInt),
    horizons: nums(o, 'horizons', isPosInt),
    topK: num(o, 'topK', isPosInt),
    controls: { errorFloor: num(c, 'errorFloor', (x) => x >= 0) },
    tolerance: num(o, 'tolerance', (x) => x >= 0),
  };
}

/** Default prompts: count, length, the id-prompt fields, and the story set (heldout unless named). */
export function parsePromptSpec(x: unknown, field: string): DefaultPromptSpec {
  const p = obj(x, field);
  const set = p.set === undefined ? undefined : (str(p, 'set', STORY_SETS) as StorySet);
  const source = p.source === undefined ? undefined : (str(p, 'source', ['auto', 'ids']) as 'auto' | 'ids');
  let texts: { id: string; text: string }[] | undefined;
  if (p.texts !== undefined) {
    if (!Array.isArray(p.texts) || p.texts.length === 0 || !p.texts.every((t) => t && typeof t.id === 'string' && typeof t.text === 'string'))
      throw new FileFormatError('protocol', `field '${field}.texts' must be a non-empty array of {id, text}`);
    texts = p.texts as { id: string; text: string }[];
  }
  return {
    count: num(p, 'count', isPosInt),
    length: num(p, 'length', isPosInt),
    seedTokens: num(p, 'seedTokens', isNonNegInt),
    seed: num(p, 'seed', isNonNegInt),
    ...(set && { set }),
    ...(source && { source }),
    ...(texts && { texts }),
  };
}

export function needPrompts(spec: ModelEvalSpec): DefaultPromptSpec {
  if (!spec.prompts) throw new FileFormatError('protocol', "field 'prompts' is required");
  return spec.prompts;
}

/** Where the default prompts' sources (opening set and indices, text, ids) are saved. */
export const PROMPTS_FILE = 'inputs/prompts.json';

/** The default prompts for `s` (story text with a tokenizer, else ids), their sources saved as `file`. */
export function savedDefaultPrompts(model: Model, s: DefaultPromptSpec, w: RunWriter, file = PROMPTS_FILE): EvalPrompt[] {
  const { prompts, sources } = defaultPromptSet(model, s);
  w.writeJson(file, sources, 'input');
  return prompts;
}

/** The line under a table saying what the prompts were (read back from the saved sources). */
export function promptsLine(read: (rel: string) => string, file = PROMPTS_FILE, what = 'Prompts'): string {
  const sources = JSON.parse(read(file)) as PromptSource[];
  const lengths = [...new Set(sources.map((p) => p.tokens.length))].join('/');
  const first = sources[0];
  const kind =
    first?.kind === 'story'
      ? `${first.set} openings`
      : first?.kind === 'text'
        ? `the user's texts (${sources.map((p) => p.id).join(', ')})`
        : 'seeded token ids';
  return `${what}: ${sources.length} x ${lengths} tokens, ${kind} continued by the model's own greedy f16 text (${file}).`;
}

/** Saved prompt sources must hold exactly the prompts the reference ran. */
export function promptsCheck(ref: ReferenceMeta, read: (rel: string) => string, checks: CheckList, file = PROMPTS_FILE): void {
  checks.try(`prompts: ${file} holds the reference's prompts, token for token`, () => {
    const sources = JSON.parse(read(file)) as PromptSource[];
    if (sources.length !== ref.entries.length) return [false, `${sources.length} saved, ${ref.entries.length} run`];
    return countFailures(
      ref.entries.map((e, i) => ({ e, s: sources[i]! })),
      ({ e, s }) => s.id === e.prompt.id && s.tokens.join() === e.prompt.tokens.join(),
      ({ e }) => e.prompt.id,
    );
  });
}

/** The reference policy re-run as an arm: must reproduce the stored reference bit for bit. */
export const CONTROL_ARM = 'control-f16';
/** The reference's digests (reference-digest.ts), not its full-vocabulary logits. */
export const REFERENCE_FILE = 'inputs/reference.kvrefd';
export const MODEL_FILE = 'inputs/model.json';
export const RUNS_FILE = 'runs.json';
const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_');
/** float32 [rows, topK + 3] per arm and prompt (logit-digest.ts). */
export const digestFile = (arm: string, prompt: string) => `digests/${safe(arm)}/${safe(prompt)}.f32`;
/** float64 [rows]: exact KL(reference || arm) per row from the full logits (the figures are exact, not bounds). */
export const klRowsFile = (arm: string, prompt: string) => `kl/${safe(arm)}/${safe(prompt)}.f64`;

/** Test hooks (sabotage) that the controls must catch; never set by the CLI. */
export interface Sabotage {
  /** Quantized regions silently stored as f32. */
  readonly disableQuantization?: boolean;
  /** Every byte attention reads zeroed during the call, restored after (storage reads back fine). */
  readonly corruptRead?: boolean;
  /** Anchors built on other layers than the policy names (seed 002's retraction). */
  readonly wrongAnchorLayers?: boolean;
  /** Anchors silently dropped. */
  readonly dropAnchors?: boolean;
}

/** The policy a sabotaged cache is really built with. */
export function sabotagedPolicy(p: CachePolicy, s: Sabotage, nLayer: number): CachePolicy | undefined {
  if (s.disableQuantization) return DISABLED;
  if (s.dropAnchors && p.anchors) return { ...p, anchors: null };
  if (s.wrongAnchorLayers && p.anchors) {
    const named = p.anchors.layers === undefined || p.anchors.layers === 'all' ? [...Array(nLayer).keys()] : p.anchors.layers;
    const other = [...Array(nLayer).keys()].filter((l) => !named.includes(l));
    return { ...p, anchors: { ...p.anchors, layers: other.length ? other : [] } };
  }
  return undefined;
}

/** An arm's saved outcomes with their digests and exact KL rows read back (for per-prompt tables). */
export function savedOutcomes(ref: ReferenceMeta, topK: number, r: ArmRecord, readBytes: (rel: string) => Uint8Array): ScoredOutcome[] {
  const width = digestWidth(Math.min(topK, ref.vocab));
  return r.outcomes.map((x, i) => {
    const rows = ref.entries[i]!.prompt.tokens.length + ref.spec.horizon - 1;
    return {
      ...x,
      digest: readF32(readBytes(digestFile(r.arm.name, x.prompt)), rows * width)[0]!,
      klRows: readF64(readBytes(klRowsFile(r.arm.name, x.prompt))),
    };
  });
}

const f64Bytes = (x: Float64Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
function readF64(bytes: Uint8Array): Float64Array {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return new Float64Array(copy.buffer);
}

/** Everything saved per arm and prompt except the logits (their digest is in digestFile). */
export type OutcomeRecord = Omit<PromptOutcome, 'logits'>;
export interface ArmRecord {
  readonly arm: EvalArm;
  readonly outcomes: OutcomeRecord[];
}

export interface ModelInfo {
  readonly file: string;
  readonly sha256: string;
  readonly arch: string;
  readonly shape: ModelShape;
  readonly vocab: number;
}

export function openModel(path: string | undefined, protocol: string): { model: Model; info: ModelInfo } {
  if (!path) throw new ArgumentError(`protocol ${protocol} needs a model (-m MODEL)`);
  const model = loadModel(path);
  const hp = model.hp;
  return {
    model,
    info: {
      file: basename(path),
      sha256: modelSha256(path),
      arch: hp.arch,
      shape: { layers: hp.nLayer, kvHeads: hp.nHeadKv, headDim: hp.headDim },
      vocab: model.nVocab,
    },
  };
}

/** What the sabotage test hook builds instead of a quantized cache: exact f32 everywhere. */
const DISABLED: CachePolicy = { k: 'f32', v: 'f32', exact: 'f32', window: 0, sinks: 0 };

export interface ArmsRun {
  readonly ref: SavedReference;
  readonly records: ArmRecord[];
  readonly scores: ArmScore[];
  readonly checks: CheckList;
}

/** Computes the reference, runs the control arm and `arms`, saves everything into `w`, checks the controls. */
export function runModelArms(
  w: RunWriter,
  model: Model,
  info: ModelInfo,
  spec: ModelEvalSpec,
  prompts: readonly EvalPrompt[],
  arms: readonly EvalArm[],
  o: { sabotage?: Sabotage; progress?: () => void } = {},
): ArmsRun {
  const ref = computeReference(model, { model: info.sha256, policy: REFERENCE_POLICY, horizon: spec.horizon, prompts });
  const { saved, ids } = savedReference(ref, spec.topK);
  w.writeJson(MODEL_FILE, info, 'input');
  w.write(REFERENCE_FILE, writeSavedReference(saved), 'input');
  const all: EvalArm[] = [{ name: CONTROL_ARM, policy: REFERENCE_POLICY }, ...arms];
  if (new Set(all.map((a) => a.name)).size !== all.length) throw new ArgumentError('model protocol: arm names must be unique');
  const records: ArmRecord[] = [];
  const scores: ArmScore[] = [];
  let control: Float32Array[] = [];
  let controlLogits: Float32Array[] = [];
  for (const arm of all) {
    const sab = arm.name === CONTROL_ARM ? {} : (o.sabotage ?? {});
    const actualPolicy = sabotagedPolicy(arm.policy, sab, info.shape.layers);
    const runs = runArm(model, ref, arm, { checkLayers: true, checkAttention: true, actualPolicy, corruptRead: sab.corruptRead, onPrompt: o.progress });
    // Scored from the float32 digest and float64 KL rows as saved, so the audit reads back exactly the numbers the run used.
    const scored: ScoredOutcome[] = runs.map(({ logits, ...rest }, i) => ({
      ...rest,
      digest: armDigest(ref, ids[i]!, i, logits),
      klRows: exactKlRows(ref.entries[i]!.logits, logits, ref.vocab),
    }));
    for (const r of scored) {
      w.write(digestFile(arm.name, r.prompt), f32Bytes(r.digest), 'output');
      w.write(klRowsFile(arm.name, r.prompt), f64Bytes(r.klRows!), 'output');
    }
    if (arm.name === CONTROL_ARM) {
      control = scored.map((r) => r.digest);
      controlLogits = runs.map((r) => r.logits);
    }
    records.push({ arm, outcomes: scored.map(({ digest: _digest, klRows: _kl, ...rest }) => rest) });
    scores.push(scoreDigests(saved, saved.digests, spec.topK, arm, scored, info.shape, spec.horizons));
  }
  w.writeJson(RUNS_FILE, records, 'output');
  const checks = new CheckList();
  // Run time only (the logits are not saved): the strongest form of the control, every logit bit for bit.
  checks.add(
    'determinism (run time): the f16 cache re-run reproduces every reference logit bit for bit',
    ...countFailures(
      ref.entries.map((e, i) => ({ e, i })),
      ({ e, i }) => controlLogits[i] !== undefined && sameF32(controlLogits[i]!, e.logits),
      ({ e }) => e.prompt.id,
    ),
  );
  modelChecks(saved, saved.digests, records, control, spec, checks);
  return { ref: saved, records, scores, checks };
}

function sameF32(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
}

/**
 * The negative controls every model protocol records: the f16 reference re-run reproduces the stored
 * reference exactly; each layer stores quantized values exactly where its arm means to quantize; the cache's
 * real bytes equal the accounting formula.
 */
export function modelChecks(
  ref: ReferenceMeta,
  refDigests: readonly Float32Array[],
  records: readonly ArmRecord[],
  control: readonly Float32Array[],
  spec: ModelEvalSpec,
  checks: CheckList,
): void {
  const c = records.find((r) => r.arm.name === CONTROL_ARM);
  checks.add(
    'control: the f16 cache re-run reproduces the reference logit digest and continuation exactly',
    ...countFailures(
      ref.entries.map((e, i) => ({ e, i })),
      ({ e, i }) =>
        control[i] !== undefined && sameF32(control[i]!, refDigests[i]!) && c !== undefined && c.outcomes[i]!.continuation.join() === e.continuation.join(),
      ({ e }) => e.prompt.id,
    ),
  );
  const floor = spec.controls.errorFloor;
  const layerRows = records.flatMap((r) => (r.outcomes[0]?.layerErrors ?? []).map((e) => ({ arm: r.arm.name, e })));
  checks.add(
    `control: stored K/V relL2 > ${floor} on every layer meant to be quantized, exact f16 rounding on the others (read back)`,
    ...countFailures(
      layerRows,
      ({ e }) => storeErrorOk(e, floor),
      ({ arm, e }) => `${arm} layer ${e.layer}: K ${e.kRelL2.toExponential(2)} V ${e.vRelL2.toExponential(2)}`,
    ),
  );
  checks.add(
    'control: every arm read its layers back',
    ...countFailures(
      records,
      (r) => (r.outcomes[0]?.layerErrors?.length ?? 0) > 0,
      (r) => r.arm.name,
    ),
  );
  attentionChecks(records, checks);
  placementChecks(records, layerCount(records), checks);
}

/** Layers of the first outcome's attention checks (the model's layer count as the run saw it). */
const layerCount = (records: readonly ArmRecord[]) => records[0]?.outcomes[0]?.attention?.length ?? 0;

/** Engine attention vs float64 attention written in the lab: the f16 arm against f16 of the appended K/V
 * (independent of the reference run), every arm against what its cache stores (a wrong read fails). */
export const READ_TOLERANCE = 1e-5;
export function attentionChecks(records: readonly ArmRecord[], checks: CheckList): void {
  const c = records.find((r) => r.arm.name === CONTROL_ARM);
  const rows = (c?.outcomes ?? []).flatMap((o) => (o.attention ?? []).map((a) => ({ o, a })));
  checks.add(
    `control (independent): the f16 cache's attention output on every layer and prompt equals float64 attention over the appended K/V rounded to f16 (relRms < ${READ_TOLERANCE})`,
    ...(rows.length
      ? countFailures(
          rows,
          ({ a }) => a.vsF16RelRms < READ_TOLERANCE,
          ({ o, a }) => `${o.prompt} layer ${a.layer}: ${a.vsF16RelRms.toExponential(2)}`,
        )
      : ([false, 'no attention checks saved'] as [boolean, string])),
  );
  const all = records.flatMap((r) => r.outcomes.flatMap((o) => (o.attention ?? []).filter((a) => a.readRelRms !== null).map((a) => ({ r, o, a }))));
  checks.add(
    `control: every arm's attention output equals float64 attention over the values its cache stores, read back (relRms < ${READ_TOLERANCE}; a cache destroyed at read fails)`,
    ...(all.length
      ? countFailures(
          all,
          ({ a }) => a.readRelRms! < READ_TOLERANCE,
          ({ r, o, a }) => `${r.arm.name} ${o.prompt} layer ${a.layer}: ${a.readRelRms!.toExponential(2)}`,
        )
      : ([false, 'no attention checks saved'] as [boolean, string])),
  );
}

/** Expected anchor span per layer of a policy: [prompt, prompt + count) clipped to the positions held. */
function anchorSpan(policy: CachePolicy, layer: number, layers: number, prompt: number, positions: number): [number, number] | null {
  const plan = planLayers(policy, layers, positions)[layer]!;
  if (!plan.anchors) return null;
  return [prompt, Math.min(prompt + plan.anchors.count, positions)];
}

/** Anchors land exactly on the layers and positions the policy names (read back from the cache's view). */
export function placementChecks(records: readonly ArmRecord[], layers: number, checks: CheckList): void {
  const anchored = records.filter((r) => r.arm.policy.anchors && r.arm.policy.anchors.count > 0);
  if (anchored.length === 0) return;
  const rows = anchored.flatMap((r) => {
    const o = r.outcomes[0]!;
    return (o.placement ?? []).map((p) => ({ r, o, p }));
  });
  checks.add(
    'anchors: every anchored arm holds anchors on exactly the layers its policy names, at positions [prompt, prompt + N) (read back from the cache regions)',
    ...(rows.length
      ? countFailures(
          rows,
          ({ r, o, p }) => {
            const want = anchorSpan(r.arm.policy, p.layer, layers, o.promptTokens, o.positions);
            const got = p.regions.anchors ?? [];
            return want === null
              ? got.length === 0
              : want[1] <= want[0]
                ? got.length === 0
                : got.length === 1 && got[0]![0] === want[0] && got[0]![1] === want[1];
          },
          ({ r, p }) => `${r.arm.name} layer ${p.layer}: ${JSON.stringify(p.regions.anchors ?? [])}`,
        )
      : ([false, 'no placement saved'] as [boolean, string])),
  );
}

/** Adds the bytes check (needs the scores). */
export function bytesCheck(scores: readonly ArmScore[], checks: CheckList): void {
  checks.add(
    'bytes: real cache bytes (cache.nbytes) == accounting formula (kvBytes) for every arm',
    ...countFailures(
      scores,
      (s) => s.bytes === s.formulaBytes,
      (s) => `${s.arm}: ${s.bytes} vs ${s.formulaBytes}`,
    ),
  );
}

export interface AuditedArms {
  readonly ref: SavedReference;
  readonly records: ArmRecord[];
  readonly scores: ArmScore[];
  readonly info: ModelInfo;
  /** The controls re-derived from the files (names as the run recorded them). */
  readonly again: CheckList;
}

/** Rescores every arm from the saved reference, tokens and logits; re-derives the controls. */
export function auditModelArms(dir: string, spec: ModelEvalSpec, checks: CheckList): AuditedArms | undefined {
  const read = (rel: string) => new Uint8Array(readFileSync(join(dir, rel)));
  const json = <T>(rel: string) => JSON.parse(readFileSync(join(dir, rel), 'utf8')) as T;
  let ref: SavedReference | undefined;
  if (
    !checks.try('reference: the saved digest artifact parses, its key and digest hash hold, at the protocol top-k', () => {
      ref = readSavedReference(read(REFERENCE_FILE));
      return [ref.k === Math.min(spec.topK, ref.vocab), `${ref.key.slice(0, 12)} k ${ref.k}`];
    })
  )
    return undefined;
  const info = json<ModelInfo>(MODEL_FILE);
  checks.add(
    'reference: made for the recorded model and the protocol horizon',
    ref!.spec.model === info.sha256 && ref!.spec.horizon === spec.horizon,
    `${info.file} ${info.sha256.slice(0, 12)}`,
  );
  const records = json<ArmRecord[]>(RUNS_FILE);
  const scores: ArmScore[] = [];
  let control: Float32Array[] = [];
  const refD = { digests: ref!.digests };
  const width = digestWidth(Math.min(spec.topK, ref!.vocab));
  const boundRows: { ok: boolean; what: string }[] = [];
  const ok = checks.try('results: every arm rescored from the saved logit digests and tokens', () => {
    for (const r of records) {
      const runs: ScoredOutcome[] = r.outcomes.map((x, i) => {
        const rows = ref!.entries[i]!.prompt.tokens.length + ref!.spec.horizon - 1;
        const bytes = read(digestFile(r.arm.name, x.prompt));
        if (bytes.length !== rows * width * 4) throw new FileFormatError(digestFile(r.arm.name, x.prompt), `${bytes.length} B, expected ${rows * width * 4}`);
        return { ...x, digest: readF32(bytes, rows * width)[0]! };
      });
      runs.forEach((x, i) => {
        const f = klRowsFile(r.arm.name, x.prompt);
        (x as { klRows?: Float64Array }).klRows = readF64(read(f));
        if (x.klRows!.length !== ref!.entries[i]!.prompt.tokens.length + ref!.spec.horizon - 1) throw new FileFormatError(f, 'wrong row count');
      });
      if (r.arm.name === CONTROL_ARM) control = runs.map((x) => x.digest);
      klRowsBound(ref!, refD.digests, spec.topK, r.arm.name, runs, boundRows);
      scores.push(scoreDigests(ref!, refD.digests, spec.topK, r.arm, runs, info.shape, spec.horizons));
    }
    checks.add(
      'kl/: every saved exact KL row is >= its top-k + tail lower bound from the saved digests (and 0 for the f16 control)',
      ...countFailures(
        boundRows,
        (b) => b.ok,
        (b) => b.what,
      ),
    );
    const saved = json<ArmScore[]>('results.json');
    if (saved.length !== scores.length) return [false, `${saved.length} saved, ${scores.length} recomputed`];
    return countFailures(
      scores.map((s, i) => [s, saved[i]!] as const),
      ([s, t]) => near(JSON.parse(JSON.stringify(s)), t, spec.tolerance),
      ([s]) => s.arm,
    );
  });
  if (!ok) return undefined;
  const again = new CheckList();
  modelChecks(ref!, refD.digests, records, control, spec, again);
  bytesCheck(scores, again);
  for (const c of again.checks) checks.add(`recomputed ${c.name}`, c.pass, c.detail);
  return { ref: ref!, records, scores, info, again };
}

/** Per arm and prompt: the exact KL rows bound from below by the digest's top-k + tail KL (rounding slack 1e-6). */
function klRowsBound(
  ref: ReferenceMeta,
  refDigests: readonly Float32Array[],
  topK: number,
  arm: string,
  runs: readonly ScoredOutcome[],
  out: { ok: boolean; what: string }[],
): void {
  const k = Math.min(topK, ref.vocab);
  runs.forEach((x, i) => {
    let ok = true;
    for (let r = 0; r < x.klRows!.length && ok; r++) {
      const bound = Math.max(0, klDigest({ digest: refDigests[i]!, k }, { digest: x.digest, k }, r, r + 1));
      ok = x.klRows![r]! >= bound - 1e-6 - 1e-3 * bound && (arm !== CONTROL_ARM || x.klRows![r] === 0);
    }
    out.push({ ok, what: `${arm} ${x.prompt}` });
  });
}

/** checks.json must hold the verdicts the audit re-derived, all PASS. */
export function auditRecordedChecks(dir: string, again: CheckList, checks: CheckList): void {
  checks.try('checks.json: the run recorded the same verdicts', () => {
    const s = JSON.parse(readFileSync(join(dir, 'checks.json'), 'utf8')) as { name: string; pass: boolean }[];
    const got = s.map((c) => `${c.name}:${c.pass}`);
    return [
      again.checks.every((c) => got.includes(`${c.name}:${c.pass}`)) && s.every((c) => c.pass),
      `${s.filter((c) => c.pass).length}/${s.length} recorded PASS`,
    ];
  });
}

/** Parses a list of scheme names (checked against the registry when arms are built). */
export function schemeList(o: Json, field: string): string[] {
  const x = o[field];
  if (!Array.isArray(x) || x.length === 0 || !x.every((s) => typeof s === 'string'))
    throw new FileFormatError('protocol', `field '${field}' must be a non-empty array of scheme names`);
  return x as string[];
}

/** What each model protocol adds to the shared run/audit: its prompts, arms, table and extra checks. */
export interface ModelProtocolHooks<S extends ModelEvalSpec> {
  prompts(model: Model, spec: S, w: RunWriter): EvalPrompt[];
  arms(model: Model, spec: S, w: RunWriter, prompts: readonly EvalPrompt[]): EvalArm[];
  headline(
    spec: S,
    scores: readonly ArmScore[],
    records: readonly ArmRecord[],
    ref: SavedReference,
    read: (rel: string) => string,
    readBytes: (rel: string) => Uint8Array,
  ): string[];
  /** Protocol checks from saved data (run and audit both call it). */
  checks?(spec: S, records: readonly ArmRecord[], ref: SavedReference, read: (rel: string) => string, checks: CheckList): void;
}

export function runModelProtocol<S extends ModelEvalSpec & { name: string }>(
  hooks: ModelProtocolHooks<S>,
  spec: S,
  protocolBytes: Uint8Array,
  out: string,
  opts: RunOptions,
): RunResult {
  const { model, info } = openModel(opts.model, spec.name);
  const w = new RunWriter(out, spec.name, protocolBytes);
  const prompts = hooks.prompts(model, spec, w);
  const arms = hooks.arms(model, spec, w, prompts);
  let done = 0;
  const total = (arms.length + 1) * prompts.length;
  const r = runModelArms(w, model, info, spec, prompts, arms, {
    sabotage: { disableQuantization: opts.sabotageDisableQuantization, ...opts.sabotage },
    progress: () => opts.progress?.(++done, total),
  });
  bytesCheck(r.scores, r.checks);
  const read = (rel: string) => readFileSync(join(w.tmp, rel), 'utf8');
  hooks.checks?.(spec, r.records, r.ref, read, r.checks);
  const lines = hooks.headline(spec, r.scores, r.records, r.ref, read, (rel) => new Uint8Array(readFileSync(join(w.tmp, rel))));
  w.writeJson('results.json', r.scores, 'output');
  w.writeJson('checks.json', r.checks.checks, 'output');
  w.write('headline.md', lines.join('\n') + '\n', 'output');
  w.finish();
  return { dir: w.out, pass: r.checks.pass, checks: r.checks, headline: lines };
}

export function auditModelProtocol<S extends ModelEvalSpec>(hooks: ModelProtocolHooks<S>, dir: string, spec: S, checks: CheckList): void {
  const a = auditModelArms(dir, spec, checks);
  if (!a) return;
  const read = (rel: string) => readFileSync(join(dir, rel), 'utf8');
  const extra = new CheckList();
  hooks.checks?.(spec, a.records, a.ref, read, extra);
  for (const c of extra.checks) {
    checks.add(`recomputed ${c.name}`, c.pass, c.detail);
    a.again.add(c.name, c.pass, c.detail);
  }
  checks.try('headline.md re-rendered from the rescored results', () => [
    read('headline.md') === hooks.headline(spec, a.scores, a.records, a.ref, read, (rel) => new Uint8Array(readFileSync(join(dir, rel)))).join('\n') + '\n',
    'byte-identical',
  ]);
  auditRecordedChecks(dir, a.again, checks);
}
