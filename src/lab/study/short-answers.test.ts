// Seed 000's short-answer probe: the answer word, scoring against f16 and the expected answers, loops, the
// UNINFORMATIVE flag when f16 answers nothing, and a real run whose quantized arm really is quantized.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadModel } from '../../model/model.js';
import { schemePolicy } from '../../cache/schemes.js';
import { repoRoot } from '../hash.js';
import {
  answerWord,
  informative,
  parseQuestions,
  runShortAnswers,
  shortAnswerRows,
  shortAnswerTable,
  type ShortAnswerConfig,
  type ShortAnswerRecord,
} from './short-answers.js';

const cfg: ShortAnswerConfig = {
  filler: '',
  horizon: 40,
  loops: { tail: 32, maxPeriod: 8 },
  arms: [{ name: 'q2', policy: schemePolicy('q2', { window: 0, sinks: 0 }) }],
  questions: [
    { id: 'len', prompt: 'x', answers: ['items'] },
    { id: 'max', prompt: 'y', answers: ['iterable'] },
  ],
};
const bytes = { sinks: 0, anchors: 0, bulk: 100, window: 0, staging: 0, total: 100, allocated: 100, transient: 0 };
const rec = (arm: string, question: string, text: string, continuation = Array.from({ length: 40 }, (_, i) => i)): ShortAnswerRecord => ({
  arm,
  question,
  promptTokens: 10,
  continuation,
  text,
  bytes,
  elements: 800,
});

test('short answers: the answer word drops markup; correct, same-as-f16 and loops are counted per arm', () => {
  assert.equal(answerWord(' :func:`os.path.join` returns'), 'os.path.join');
  assert.equal(answerWord(' items) of an object.'), 'items');
  assert.equal(answerWord('\n\n'), '');
  const loop = Array.from({ length: 40 }, (_, i) => (i < 8 ? i : 100 + (i % 3)));
  const records = [rec('f16', 'len', ' items) of'), rec('f16', 'max', ' class'), rec('q2', 'len', ' bytes) of', loop), rec('q2', 'max', ' class')];
  const rows = shortAnswerRows(cfg, records);
  assert.deepEqual(
    rows.map((r) => [r.arm, r.correct, r.sameAsF16, r.loops]),
    [
      ['f16', 1, 2, 0],
      ['q2', 0, 1, 1],
    ],
  );
  assert.equal(informative(rows), true);
  assert.deepEqual(rows[0]!.sameCi, [1, 1]);
  assert.ok(rows[1]!.sameCi[0] < 0.5 && rows[1]!.sameCi[1] >= 0.5, JSON.stringify(rows[1]!.sameCi));
  assert.ok(!shortAnswerTable(cfg, records).join('\n').includes('UNINFORMATIVE'));
});

test('short answers: f16 answering nothing flags the table UNINFORMATIVE', () => {
  const records = [rec('f16', 'len', ' bytes'), rec('f16', 'max', ' class'), rec('q2', 'len', ' bytes'), rec('q2', 'max', ' class')];
  assert.equal(informative(shortAnswerRows(cfg, records)), false);
  assert.match(shortAnswerTable(cfg, records).join('\n'), /UNINFORMATIVE on this model/);
});

test('short answers: a questions file needs prompt and answers', () => {
  assert.deepEqual(parseQuestions([{ prompt: 'a', answers: ['b'] }], 'q.json'), [{ id: 'q0', prompt: 'a', answers: ['b'] }]);
  assert.throws(() => parseQuestions([{ prompt: 'a' }], 'q.json'), /q\.json\[0\].*answers/);
  assert.throws(() => parseQuestions({}, 'q.json'), /non-empty JSON array/);
});

const MODEL = join(repoRoot(), '..', 'shared', 'models', 'stories260K.gguf');
test('short answers: a real run records every arm and question; the quantized arm holds quantized groups (bulk bytes)', (t) => {
  if (!existsSync(MODEL)) return void t.skip(`${MODEL} not present`);
  const model = loadModel(MODEL);
  const c: ShortAnswerConfig = {
    ...cfg,
    filler: 'Once upon a time, there was a little girl. She liked to play in the park with her dog. The dog was brown and liked to run. ',
    horizon: 8,
    questions: [{ id: 'sky', prompt: 'The bird flew up into the', answers: ['sky'] }],
  };
  const records = runShortAnswers(model, c);
  assert.deepEqual(
    records.map((r) => `${r.arm}/${r.question}`),
    ['f16/sky', 'q2/sky'],
  );
  assert.equal(shortAnswerRows(c, records)[0]!.effectiveBits, 16);
  // Past 32 positions a per-channel group leaves f32 staging: the prompt is long enough to be read quantized.
  const q2 = records[1]!.bytes;
  assert.ok(q2.bulk > 0 && q2.staging < q2.total, JSON.stringify(q2));
  assert.ok(records.every((r) => r.continuation.length === 8 && r.promptTokens > 32));
});
