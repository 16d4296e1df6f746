// `kvpack study -m MODEL [--text FILE ...]`: seed 000's tables and seed 002's anchors study on the user's
// model, as variants of the built-in protocols (each frozen by its hash), negative controls that must fail,
// a memory table and a report naming the model, in one new audited directory.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ArgumentError } from '../../errors.js';
import { loadModel } from '../../model/model.js';
import { sha256 } from '../hash.js';
import { RunWriter, readManifest } from '../manifest.js';
import { getProtocol, loadProtocol } from '../protocol.js';
import type { RunResult } from '../protocol-types.js';
import { defaultPromptSet, type DefaultPromptSpec } from '../prompts.js';
import { modelSha256 } from '../reference-logits.js';
import { CALIBRATION_OF, type StorySet } from '../story-openings.js';
import { resolveVariantObject } from '../variant.js';
import { DOC_NEEDLES } from './doc-needles.js';
import { equalBytesTolerance, studyLiveArms } from './equal-bytes.js';
import { runShortAnswers, type ShortAnswerConfig, type ShortQuestion } from './short-answers.js';
import { DOC_QUESTIONS, STORY_QUESTIONS } from './short-questions.js';
import { schemePolicy } from '../../cache/schemes.js';
import { storySentences } from '../protocols/needles-core.js';
import { memoryRows } from './memory.js';
import { runNegativeControls } from './negative-controls.js';
import { renderStudyHtml, renderStudyMarkdown } from './study-report.js';

export const STUDY = 'study';
export const NEGATIVE_FILE = 'negative-controls/records.json';
export const MEMORY_FILE = 'memory.json';
export const SHORT_ANSWERS_FILE = 'short-answers/records.json';
/** Parts of a study, in report order (tests run a subset). */
export const STUDY_PARTS = ['live-cache', 'window-sweep', 'needles', 'anchors'] as const;
export type StudyPart = (typeof STUDY_PARTS)[number];

export interface StudyModel {
  readonly file: string;
  readonly sha256: string;
  readonly arch: string;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly vocab: number;
  readonly ctxTrain: number;
}

export interface StudyConfig {
  readonly name: typeof STUDY;
  readonly version: 1;
  readonly model: StudyModel;
  /** What the user asked for and what it resolved to. */
  readonly options: {
    ctx: number;
    horizon: number;
    promptTokens: number;
    prompts: number;
    seed: number;
    openings: 'story' | 'doc';
    texts: { id: string; file: string; sha256: string }[];
  };
  readonly command: string;
  readonly runs: StudyPart[];
  /** Each sub-run's resolved protocol.json sha256 (variants of the built-ins; the audit re-checks them). */
  readonly frozen: Record<string, string>;
  readonly negative: { readonly horizon: number; readonly errorFloor: number; readonly promptTokens: number };
  /** Seed 000's short-answer probe (questions, filler, arms): frozen here, records in SHORT_ANSWERS_FILE. */
  readonly shortAnswers: ShortAnswerConfig & { readonly source: string };
}

export interface StudyOptions {
  readonly model: string;
  readonly out: string;
  readonly texts?: readonly string[];
  readonly ctx?: number;
  readonly prompts?: number;
  readonly seed?: number;
  readonly openings?: 'story' | 'doc';
  readonly parts?: readonly StudyPart[];
  /** Short-answer questions (default: the built-in set for the openings) and where they came from. */
  readonly questions?: { readonly list: readonly ShortQuestion[]; readonly file: string; readonly sha256: string };
  readonly onStart?: (name: string, total: number) => void;
  readonly onProgress?: (name: string, done: number, total: number) => void;
}

export interface StudyResult {
  readonly dir: string;
  readonly pass: boolean;
  readonly runs: { name: string; result: RunResult }[];
  readonly config: StudyConfig;
}

/** The variant patch of each part for this model and these options. */
function variantSets(cfg: StudyConfig, prompts: DefaultPromptSpec): Record<StudyPart, Record<string, unknown>> {
  const { ctx, horizon, openings } = cfg.options;
  const calib = CALIBRATION_OF[prompts.set ?? 'heldout'];
  const anchors = JSON.parse(Buffer.from(loadProtocol('anchors').bytes).toString('utf8')) as { sweeps: unknown[] };
  const needles = JSON.parse(Buffer.from(loadProtocol('needles').bytes).toString('utf8')) as { text: Record<string, unknown>; horizon: number };
  const common = { prompts, horizon, horizons: [50, 100] };
  const shape = { layers: cfg.model.layers, kvHeads: cfg.model.kvHeads, headDim: cfg.model.headDim };
  const whole = 32 * Math.floor(ctx / 32);
  const groups = whole - horizon + 1 >= 8 ? whole : ctx;
  return {
    // Runs end at a whole number of 32-position groups (no f32 staging left at the end), where the filled 2-bit
    // arms' windows make every equal-bytes arm's real bytes equal q2k's.
    'live-cache': {
      ...common,
      prompts: { ...prompts, length: groups - horizon + 1 },
      shortTokens: Math.min(8, horizon),
      arms: studyLiveArms(shape, groups),
      budgetArm: 'q2k',
      equalBytesTolerance: equalBytesTolerance(shape, groups),
    },
    // Seed 000's windows were for 5K-200K contexts: scaled so its 1024 is a quarter of this context.
    'window-sweep': { ...common, windowScale: Math.min(1, ctx / 4096), windowScaleNote: `the study scales seed 000's windows by ctx/4096 = ${ctx}/4096` },
    // As long a document as the model's context allows (the cue and the answer after it).
    // 4 names x 3 depths (the built-in runs 12 names): a needle prompt is a whole context long.
    needles: {
      context: cfg.model.ctxTrain - needles.horizon - 24,
      text: {
        ...needles.text,
        ...(openings === 'doc' ? DOC_NEEDLES : {}),
        names: ((openings === 'doc' ? DOC_NEEDLES.names : needles.text.names) as string[]).slice(0, 4),
      },
    },
    anchors: {
      ...common,
      probe: {
        layers: Math.max(1, Math.floor(cfg.model.layers / 3)),
        sequences: { count: 2, length: Math.min(64, prompts.length), seedTokens: 8, seed: 7, set: calib },
      },
      sweeps: [...anchors.sweeps, { schemes: ['nf4', 'sign'], counts: [32], precisions: ['f16'], layerSets: ['all', 'layer0'], modes: ['prompt'] }],
    },
  };
}

function studyCommand(o: StudyOptions, cfg: StudyConfig): string {
  const parts = [`kvpack study -m ${o.model}`, ...(o.texts ?? []).map((t) => `--text ${t}`), `--ctx ${cfg.options.ctx}`];
  if (!o.texts?.length) parts.push(`--prompts ${cfg.options.prompts}`, `--openings ${cfg.options.openings}`);
  parts.push(`--seed ${cfg.options.seed}`, `--out ${basename(o.out)}`);
  if (o.parts) parts.push(`--parts ${o.parts.join(',')}`);
  if (o.questions) parts.push(`--questions ${o.questions.file}`);
  return parts.join(' ');
}

/** The short-answer probe: the user's questions or the built-in set, after a passage of the needles' filler
 * text, on the live-cache schemes plus q2k with seed 000's 128-position window scaled to this context. */
function shortAnswerConfig(o: StudyOptions, openings: 'story' | 'doc', ctx: number): StudyConfig['shortAnswers'] {
  const story =
    openings === 'doc'
      ? DOC_NEEDLES.story
      : (JSON.parse(Buffer.from(loadProtocol('needles').bytes).toString('utf8')) as { text: { story: string } }).text.story;
  const sentences = storySentences(story);
  const filler = sentences.slice(0, Math.min(sentences.length, openings === 'doc' ? 12 : 14)).join('') + (openings === 'doc' ? '\n\n' : '\n');
  const window = Math.max(1, Math.round(128 * Math.min(1, ctx / 4096)));
  const arms = [
    { name: 'q4_0', policy: schemePolicy('q4_0', { window: 0, sinks: 0 }) },
    { name: 'q2k', policy: schemePolicy('q2k', { window: 0, sinks: 0 }) },
    { name: 'k4-v2c', policy: { k: 'q4_0', v: 'q2c_0', window: 0, sinks: 0 } },
    { name: 'kivi2', policy: schemePolicy('kivi2', { window: 0, sinks: 0 }) },
    { name: 'q2', policy: schemePolicy('q2', { window: 0, sinks: 0 }) },
    { name: `q2k+w${window}`, policy: schemePolicy('q2k', { window, sinks: 4 }) },
  ];
  return {
    source: o.questions ? `${o.questions.file} sha256 ${o.questions.sha256.slice(0, 12)}` : `built-in ${openings} questions`,
    filler,
    horizon: 48,
    loops: { tail: 32, maxPeriod: 8 },
    arms,
    questions: o.questions?.list ?? (openings === 'doc' ? DOC_QUESTIONS : STORY_QUESTIONS),
  };
}

export function runStudy(o: StudyOptions): StudyResult {
  const model = loadModel(o.model);
  const hp = model.hp;
  const ctx = Math.min(o.ctx ?? Math.min(512, hp.nCtxTrain), hp.nCtxTrain);
  const horizon = Math.min(100, Math.floor(ctx / 2));
  if (ctx - horizon < 16) throw new ArgumentError(`--ctx ${ctx} leaves no room for a prompt before ${horizon} generated tokens`);
  const texts = (o.texts ?? []).map((file, i) => {
    const buf = readFileSync(file);
    return { id: `t${i}-${basename(file).replace(/[^A-Za-z0-9_.-]/g, '_')}`, file: basename(file), sha256: sha256(buf), text: buf.toString('utf8') };
  });
  if (texts.length && !model.tokenizer) throw new ArgumentError('--text needs a model with a tokenizer');
  const openings = o.openings ?? 'story';
  const count = texts.length || (o.prompts ?? 8);
  const seed = o.seed ?? 1;
  const set: StorySet = openings === 'doc' ? 'doc-heldout' : 'heldout';
  const prompts: DefaultPromptSpec = texts.length
    ? { count, length: ctx - horizon, seedTokens: 8, seed, texts: texts.map((t) => ({ id: t.id, text: t.text })) }
    : { count, length: ctx - horizon, seedTokens: 8, seed, set };
  const parts = [...(o.parts ?? STUDY_PARTS)];
  const info: StudyModel = {
    file: basename(o.model),
    sha256: modelSha256(o.model),
    arch: hp.arch,
    layers: hp.nLayer,
    heads: hp.nHead,
    kvHeads: hp.nHeadKv,
    headDim: hp.headDim,
    vocab: model.nVocab,
    ctxTrain: hp.nCtxTrain,
  };
  const negative = { horizon: 16, errorFloor: 1e-3, promptTokens: Math.min(48, ctx - 16) };
  const asked = shortAnswerConfig(o, openings, ctx);
  const shortAnswers = model.tokenizer ? asked : { ...asked, questions: [] };
  const base: StudyConfig = {
    name: STUDY,
    version: 1,
    model: info,
    options: { ctx, horizon, promptTokens: ctx - horizon, prompts: count, seed, openings, texts: texts.map(({ text: _t, ...rest }) => rest) },
    command: '',
    runs: parts,
    frozen: {},
    negative,
    shortAnswers,
  };
  const sets = variantSets(base, prompts);
  const resolved = parts.map((p) => resolveVariantObject({ variantOf: p, set: sets[p] }));
  const cfg: StudyConfig = { ...base, command: studyCommand(o, base), frozen: Object.fromEntries(resolved.map((r) => [r.name, sha256(r.bytes)])) };
  const w = new RunWriter(o.out, STUDY, Buffer.from(JSON.stringify(cfg, null, 2) + '\n'));
  const runs: StudyResult['runs'] = [];
  for (const r of resolved) {
    const protocol = getProtocol(r.name);
    let started = false;
    const result = protocol.run(protocol.parse(JSON.parse(Buffer.from(r.bytes).toString('utf8'))), r.bytes, join(w.tmp, r.name), {
      model: o.model,
      progress: (done, total) => {
        if (!started) o.onStart?.(r.name, total);
        started = true;
        o.onProgress?.(r.name, done, total);
      },
    });
    w.adopt(r.name, 'output');
    runs.push({ name: r.name, result });
  }
  // Negative controls on one short calibration prompt (never an evaluation prompt).
  const ncPrompt = defaultPromptSet(model, { count: 1, length: negative.promptTokens, seedTokens: 8, seed: 11, set: CALIBRATION_OF[set] }).prompts[0]!;
  const cases = runNegativeControls(model, info.sha256, ncPrompt, negative.horizon);
  if (shortAnswers.questions.length) {
    let done = 0;
    const total = (shortAnswers.arms.length + 1) * shortAnswers.questions.length;
    o.onStart?.('short-answers', total);
    w.writeJson(
      SHORT_ANSWERS_FILE,
      runShortAnswers(model, shortAnswers, () => o.onProgress?.('short-answers', ++done, total)),
      'output',
    );
  }
  w.writeJson(NEGATIVE_FILE, cases, 'output');
  w.writeJson(MEMORY_FILE, memoryRows({ layers: info.layers, kvHeads: info.kvHeads, headDim: info.headDim }, ctx), 'output');
  const env = readManifest(join(w.tmp, parts[0]!)).environment;
  w.write('report.md', renderStudyMarkdown(w.tmp, cfg, env), 'output');
  w.write('report.html', renderStudyHtml(w.tmp, cfg, env), 'output');
  w.finish();
  return { dir: w.out, pass: runs.every((r) => r.result.pass), runs, config: cfg };
}
