import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModel, modelFromLoaded } from '../../model/model.js';
import { tinyModel } from '../../../test/e2e/tiny-models.js';
import { repoRoot } from '../hash.js';
import { runAndTamper } from '../../../test/fixtures/model-runs.js';
import { needlesInformative, parseNeedles, plantNeedles, storySentences } from './needles-core.js';

const SMALL = {
  arms: [{ name: 'q2k', scheme: 'q2k', window: 0, sinks: 0 }],
  context: 200,
  depths: [0.25, 0.9],
  depthTolerance: 0.3,
  horizon: 6,
  horizons: [6],
};
const STORIES = join(repoRoot(), '..', 'shared', 'models', 'stories260K.bin');
const frozen = () => JSON.parse(readFileSync(join(repoRoot(), 'protocols', 'needles.json'), 'utf8')) as Record<string, unknown>;

test('needles: tiny run passes, audits PASS, a flipped byte FAILs', (t) =>
  runAndTamper(t, 'needles', { ...SMALL, text: { ...(frozen().text as object), names: ['Zorba', 'Kip'] } }));

test('needles: story sentences never split inside a quotation', () => {
  assert.deepEqual(storySentences('She said, "Hi. Are you lost?" The dog barked. It ran.'), ['She said, "Hi. Are you lost?" ', 'The dog barked. ', 'It ran.']);
});

test('needles (text): the prompt stops where the name begins and the answer spells it', (t) => {
  if (!existsSync(STORIES)) return void t.skip(`${STORIES} not present`);
  const model = loadModel(STORIES);
  const spec = parseNeedles({ ...frozen(), ...SMALL, context: 200, text: { ...(frozen().text as object), names: ['Zorba', 'Marvik'] } });
  const { prompts, needles } = plantNeedles(model, spec);
  const tok = model.tokenizer!;
  assert.equal(needles.length, 4);
  for (const [i, n] of needles.entries()) {
    const text = tok.decode(prompts[i]!.tokens);
    assert.ok(text.trimEnd().endsWith('She said, "Come here,'), text.slice(-40));
    assert.ok(text.includes(`She had a pet frog named ${n.name}. ${n.name} liked to jump.`));
    assert.equal(
      tok
        .decode([...prompts[i]!.tokens, ...n.answer])
        .trimEnd()
        .slice(-n.name!.length),
      n.name,
    );
    assert.ok(prompts[i]!.tokens.length <= 200 && Math.abs(n.at / n.length - n.depth) <= 0.3, `${n.prompt}: ${n.at}/${n.length}`);
  }
});

test('needles (ids): a model without a tokenizer gets id needles whose cue repeats their start', () => {
  const model = modelFromLoaded(tinyModel('llama'));
  assert.equal(model.tokenizer, undefined);
  const spec = parseNeedles({ ...frozen(), ...SMALL, context: 48, horizon: 5, horizons: [5] });
  const { prompts, needles } = plantNeedles(model, spec);
  for (const [i, n] of needles.entries()) {
    const p = prompts[i]!.tokens;
    assert.equal(p.length, 48 + spec.ids.cue);
    assert.deepEqual(p.slice(n.at, n.at + spec.ids.cue), p.slice(-spec.ids.cue));
    assert.deepEqual(p.slice(n.at + spec.ids.cue, n.at + spec.ids.needleTokens), n.answer);
  }
});

test('needles: the table is flagged UNINFORMATIVE when the f16 reference recalls no needle, not when it recalls one', () => {
  const row = (arm: string, n: number) => ({ arm, exact: { '0.25': n, '0.5': 0 }, onset: { '0.25': n, '0.5': 0 }, perDepth: 2 });
  assert.equal(needlesInformative([row('f16 reference', 0), row('q2k', 1)]), false);
  assert.equal(needlesInformative([row('f16 reference', 1), row('q2k', 0)]), true);
});
