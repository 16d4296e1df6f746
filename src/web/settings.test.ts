// URL parameters of the page: defaults, bounds reported (never clamped), and a round trip through a link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SETTINGS, pagePolicy, readSettings, settingsQuery } from './settings.js';
import { firstDivergence } from './divergence.js';

test('readSettings: parameters over the defaults; bad values named and left at their default', () => {
  const { settings, problems } = readSettings(
    new URLSearchParams('model=m.gguf&prompt=Hi&n=8&scheme=q4_0&window=0&sinks=2&anchors=3&threads=1&compare=1&autorun=1'),
  );
  assert.deepEqual(settings, {
    model: 'm.gguf',
    prompt: 'Hi',
    n: 8,
    scheme: 'q4_0',
    window: 0,
    sinks: 2,
    anchors: 3,
    threads: 1,
    compare: true,
    autorun: true,
  });
  assert.deepEqual(problems, []);
  const bad = readSettings(new URLSearchParams('scheme=q3&n=0&window=-1&threads=1.5'));
  assert.deepEqual(bad.settings, DEFAULT_SETTINGS);
  assert.equal(bad.problems.length, 4);
  assert.match(bad.problems[0]!, /^scheme 'q3' is not one of f16, q8_0, /);
  assert.equal(bad.problems[1], "n must be an integer in [1, 4096], got '0'");
});

test('settingsQuery: a link reproduces the settings (autorun left out)', () => {
  const s = { ...DEFAULT_SETTINGS, model: 'a b.gguf', prompt: 'x&y', n: 5, scheme: 'f16', compare: true, autorun: true };
  const back = readSettings(new URLSearchParams(settingsQuery(s))).settings;
  assert.deepEqual(back, { ...s, autorun: false });
  assert.equal(settingsQuery(DEFAULT_SETTINGS), '');
});

test('pagePolicy: the scheme with window, sinks and f16 anchors on every layer', () => {
  assert.deepEqual(pagePolicy({ window: 8, sinks: 2, anchors: 0 }, 'q2k'), { window: 8, sinks: 2, k: 'q2c_0', v: 'q4_0' });
  assert.deepEqual(pagePolicy({ window: 8, sinks: 2, anchors: 4 }, 'f16').anchors, { count: 4, layers: 'all', precision: 'f16' });
});

test('firstDivergence: first differing index, a run that stops early differs at its end', () => {
  assert.equal(firstDivergence([1, 2, 3], [1, 2, 3]), -1);
  assert.equal(firstDivergence([1, 2, 3], [1, 5, 3]), 1);
  assert.equal(firstDivergence([1, 2], [1, 2, 3]), 2);
});
