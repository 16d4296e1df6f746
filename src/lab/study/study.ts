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
import { memoryRows } from './memory.js';
import { runNegativeControls } from './negative-controls.js';
import { renderStudyHtml, renderStudyMarkdown } from './study-report.js';

export const STUDY = 'study';
export const NEGATIVE_FILE = 'negative-controls/records.json';
export const MEMORY_FILE = 'memory.json';
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
  return {
    'live-cache': { ...common, shortTokens: Math.min(8, horizon) },
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
  return parts.join(' ');
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
  const base: StudyConfig = {
    name: STUDY,
    version: 1,
    model: info,
    options: { ctx, horizon, promptTokens: ctx - horizon, prompts: count, seed, openings, texts: texts.map(({ text: _t, ...rest }) => rest) },
    command: '',
    runs: parts,
    frozen: {},
    negative,
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
  w.writeJson(NEGATIVE_FILE, cases, 'output');
  w.writeJson(MEMORY_FILE, memoryRows({ layers: info.layers, kvHeads: info.kvHeads, headDim: info.headDim }, ctx), 'output');
  const env = readManifest(join(w.tmp, parts[0]!)).environment;
  w.write('report.md', renderStudyMarkdown(w.tmp, cfg, env), 'output');
  w.write('report.html', renderStudyHtml(w.tmp, cfg, env), 'output');
  w.finish();
  return { dir: w.out, pass: runs.every((r) => r.result.pass), runs, config: cfg };
}
