// Seed 000's short-answer probe and loop detection: completion-style questions with one short answer each
// (for a docs model, "Return the largest item in an" -> "iterable"), asked after a filler passage so the
// cache holds quantized positions, greedy decode per arm; scored by answer agreement with f16, accuracy
// against the expected answers and loops in the continuation. Records hold tokens and decoded text so the
// report and the audit re-derive every figure without the model.
import type { CachePolicy } from '../../cache/policy.js';
import type { CacheBytes } from '../../cache/kvcache.js';
import { ArgumentError } from '../../errors.js';
import type { Model } from '../../model/model.js';
import { endsInLoop } from '../protocols/live-cache-core.js';
import { encodeOpening } from '../prompts.js';
import { REFERENCE_POLICY } from '../reference-logits.js';
import { runSequence } from '../sequence.js';
import { bootstrapCi } from '../bootstrap.js';

export interface ShortQuestion {
  readonly id: string;
  /** Text the answer completes (asked after the filler passage). */
  readonly prompt: string;
  /** Accepted answers (the first word of the continuation, compared case-insensitively). */
  readonly answers: readonly string[];
}

export interface ShortAnswerConfig {
  /** Passage before every question (so positions are quantized, not only staged). */
  readonly filler: string;
  /** Greedy tokens per question: the answer is their first word, loops are read on all of them. */
  readonly horizon: number;
  readonly loops: { readonly tail: number; readonly maxPeriod: number };
  readonly arms: readonly { readonly name: string; readonly policy: CachePolicy }[];
  readonly questions: readonly ShortQuestion[];
}

export interface ShortAnswerRecord {
  readonly arm: string;
  readonly question: string;
  readonly promptTokens: number;
  readonly continuation: number[];
  /** The decoded continuation. */
  readonly text: string;
  readonly bytes: CacheBytes;
  /** K/V values held (positions x layers x kv heads x head dim x 2), for effective bits. */
  readonly elements: number;
}

export const F16_ARM = 'f16';

/** The answer word: leading whitespace and reStructuredText markup (a :role:, quotes) dropped, then a dotted identifier. */
export function answerWord(text: string): string {
  return (text.replace(/^\s*(?::\w+:)?[\s`~*'"(]*/, '').match(/^\w+(?:\.\w+)*/) ?? [''])[0]!;
}

export const isCorrect = (q: ShortQuestion, text: string) => q.answers.some((a) => a.toLowerCase() === answerWord(text).toLowerCase());

export function runShortAnswers(model: Model, cfg: ShortAnswerConfig, onDone?: () => void): ShortAnswerRecord[] {
  const tok = model.tokenizer;
  if (!tok) throw new ArgumentError('short answers: the model has no tokenizer');
  const hp = model.hp;
  const out: ShortAnswerRecord[] = [];
  for (const arm of [{ name: F16_ARM, policy: REFERENCE_POLICY }, ...cfg.arms]) {
    for (const q of cfg.questions) {
      const ids = encodeOpening(tok, cfg.filler + q.prompt, true);
      const r = runSequence(model, arm.policy, ids, cfg.horizon);
      out.push({
        arm: arm.name,
        question: q.id,
        promptTokens: ids.length,
        continuation: r.continuation,
        text: tok.decode(r.continuation),
        bytes: r.bytes,
        elements: r.positions * hp.nLayer * hp.nHeadKv * hp.headDim * 2,
      });
      onDone?.();
    }
  }
  return out;
}

export interface ShortAnswerRow {
  readonly arm: string;
  readonly correct: number;
  readonly sameAsF16: number;
  readonly loops: number;
  /** Bootstrap 95% intervals over questions of the correct and same-as-f16 shares. */
  readonly correctCi: [number, number];
  readonly sameCi: [number, number];
  readonly n: number;
  readonly effectiveBits: number;
}

export function shortAnswerRows(cfg: ShortAnswerConfig, records: readonly ShortAnswerRecord[]): ShortAnswerRow[] {
  const arms = [...new Set(records.map((r) => r.arm))];
  const f16 = new Map(records.filter((r) => r.arm === F16_ARM).map((r) => [r.question, answerWord(r.text)]));
  return arms.map((arm) => {
    const rs = records.filter((r) => r.arm === arm);
    const q = (id: string) => cfg.questions.find((x) => x.id === id)!;
    const correct = rs.map((r) => (isCorrect(q(r.question), r.text) ? 1 : 0));
    const same = rs.map((r) => (answerWord(r.text) === f16.get(r.question) ? 1 : 0));
    return {
      arm,
      correct: correct.reduce((a: number, b) => a + b, 0),
      sameAsF16: same.reduce((a: number, b) => a + b, 0),
      correctCi: bootstrapCi(correct),
      sameCi: bootstrapCi(same),
      loops: rs.filter((r) => endsInLoop(r.continuation, cfg.loops.tail, cfg.loops.maxPeriod)).length,
      n: rs.length,
      effectiveBits: (rs.reduce((s, r) => s + r.bytes.total, 0) * 8) / rs.reduce((s, r) => s + r.elements, 0),
    };
  });
}

/** A bootstrap interval over questions, as percentages. */
const share = ([lo, hi]: [number, number]) => `[${Math.round(100 * lo)}, ${Math.round(100 * hi)}]%`;

/** The f16 model answers at least one question: otherwise the probe measures nothing. */
export const informative = (rows: readonly ShortAnswerRow[]) => (rows.find((r) => r.arm === F16_ARM)?.correct ?? 0) > 0;

export function shortAnswerTable(cfg: ShortAnswerConfig, records: readonly ShortAnswerRecord[]): string[] {
  const rows = shortAnswerRows(cfg, records);
  const lengths = records.map((r) => r.promptTokens);
  const f16 = rows.find((r) => r.arm === F16_ARM);
  const flag = informative(rows)
    ? `f16 baseline: ${f16!.correct}/${f16!.n} answered correctly.`
    : `**UNINFORMATIVE on this model: the f16 model answers none of the ${f16?.n ?? 0} questions, so agreement and accuracy measure nothing.**`;
  const word = (arm: string, id: string) => answerWord(records.find((r) => r.arm === arm && r.question === id)?.text ?? '') || '-';
  const armsOf = rows.map((r) => r.arm);
  return [
    `${cfg.questions.length} completion-style questions with one short answer each, asked after a ${lengths.length ? Math.min(...lengths) : 0}-${lengths.length ? Math.max(...lengths) : 0}-token prompt (filler passage + question; per-channel K/V formats hold their latest <= 31 positions exact in f32 staging, counted in the bits); greedy ${cfg.horizon} tokens; answer = the first word (markup dropped); loops = the last ${cfg.loops.tail} tokens repeat with a period <= ${cfg.loops.maxPeriod}; [95%] = bootstrap interval over questions. ${flag}`,
    '',
    '| arm | correct [95%] | same answer as f16 [95%] | loops | eff. bits |',
    '|---|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.arm} | ${r.correct}/${r.n} ${share(r.correctCi)} | ${r.sameAsF16}/${r.n} ${share(r.sameCi)} | ${r.loops}/${r.n} | ${r.effectiveBits.toFixed(2)} |`,
    ),
    '',
    `| question | expected | ${armsOf.join(' | ')} |`,
    `|---|---|${armsOf.map(() => '---').join('|')}|`,
    ...cfg.questions.map((q) => `| ${q.id} | ${q.answers.join(' / ')} | ${armsOf.map((a) => word(a, q.id)).join(' | ')} |`),
  ];
}

/** A user's questions file: JSON array of {id?, prompt, answers}. */
export function parseQuestions(json: unknown, file: string): ShortQuestion[] {
  if (!Array.isArray(json) || json.length === 0) throw new ArgumentError(`${file}: expected a non-empty JSON array of {prompt, answers}`);
  return json.map((x, i) => {
    const o = x as { id?: unknown; prompt?: unknown; answers?: unknown };
    if (typeof o?.prompt !== 'string' || !Array.isArray(o.answers) || o.answers.length === 0 || !o.answers.every((a) => typeof a === 'string' && a.length > 0))
      throw new ArgumentError(`${file}[${i}]: needs "prompt" (string) and "answers" (non-empty array of strings)`);
    return { id: typeof o.id === 'string' ? o.id : `q${i}`, prompt: o.prompt, answers: o.answers as string[] };
  });
}
