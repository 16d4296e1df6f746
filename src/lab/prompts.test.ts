import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadModel, modelFromLoaded } from '../model/model.js';
import { tinyModel } from '../../test/e2e/tiny-models.js';
import { repoRoot } from './hash.js';
import { defaultPromptSet, encodeOpening } from './prompts.js';
import { storyOpenings } from './story-openings.js';

const STORIES = join(repoRoot(), '..', 'shared', 'models', 'stories260K.bin');

test('story openings: the held-out and calibration sets share no opening', () => {
  const held = new Set(storyOpenings.heldout);
  assert.equal(held.size, storyOpenings.heldout.length);
  for (const o of storyOpenings.calibration) assert.ok(!held.has(o), o);
});

test('doc openings: the held-out and calibration sets share no opening', () => {
  const held = new Set(storyOpenings['doc-heldout']);
  assert.equal(held.size, storyOpenings['doc-heldout'].length);
  for (const o of storyOpenings['doc-calibration']) assert.ok(!held.has(o), o);
});

test('story prompts: an opening of the named set, continued to the length, text saved beside', (t) => {
  if (!existsSync(STORIES)) return void t.skip(`${STORIES} not present`);
  const model = loadModel(STORIES);
  const tok = model.tokenizer!;
  for (const set of ['heldout', 'calibration'] as const) {
    const { prompts, sources } = defaultPromptSet(model, { count: 2, length: 40, seedTokens: 4, seed: 3, set });
    assert.equal(prompts.length, 2);
    for (const [i, p] of prompts.entries()) {
      const s = sources[i]!;
      assert.equal(p.tokens.length, 40);
      assert.equal(s.kind, 'story');
      assert.equal(s.set, set);
      const head = encodeOpening(tok, storyOpenings[set][s.openings![0]!]!, true);
      assert.deepEqual(p.tokens.slice(0, head.length), head);
      assert.equal(p.tokens[0], model.bos);
      assert.deepEqual(s.tokens, p.tokens);
    }
    assert.notDeepEqual(sources[0]!.openings![0], sources[1]!.openings![0]);
  }
  // The same spec gives the same prompts; ids on request even with a tokenizer.
  const a = defaultPromptSet(model, { count: 1, length: 30, seedTokens: 4, seed: 5 }).prompts[0]!.tokens;
  assert.deepEqual(defaultPromptSet(model, { count: 1, length: 30, seedTokens: 4, seed: 5 }).prompts[0]!.tokens, a);
  assert.equal(defaultPromptSet(model, { count: 1, length: 30, seedTokens: 4, seed: 5, source: 'ids' }).sources[0]!.kind, 'ids');
  assert.throws(() => defaultPromptSet(model, { count: 99, length: 30, seedTokens: 4, seed: 5 }), /99 story prompts asked of the heldout set/);
});

test('doc openings: the held-out and calibration sets share no opening', () => {
  const held = new Set(storyOpenings['doc-heldout']);
  assert.equal(held.size, storyOpenings['doc-heldout'].length);
  for (const o of storyOpenings['doc-calibration']) assert.ok(!held.has(o), o);
});

test('story prompts: an opening ends on a word, never on a lone space token', (t) => {
  if (!existsSync(STORIES)) return void t.skip(`${STORIES} not present`);
  const tok = loadModel(STORIES).tokenizer!;
  const ids = encodeOpening(tok, 'He liked to', false);
  assert.notEqual(tok.decode([ids.at(-1)!]).trim(), '');
  assert.deepEqual(ids, tok.encode('He liked to', { addSpecial: false }));
});

test('id prompts: a model without a tokenizer gets seeded ids after BOS', () => {
  const model = modelFromLoaded(tinyModel('llama'));
  const { prompts, sources } = defaultPromptSet(model, { count: 2, length: 20, seedTokens: 4, seed: 1 });
  assert.deepEqual(
    sources.map((s) => s.kind),
    ['ids', 'ids'],
  );
  for (const p of prompts) assert.equal(p.tokens.length, 20);
  assert.notDeepEqual(prompts[0]!.tokens, prompts[1]!.tokens);
});
