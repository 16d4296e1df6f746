import { test } from 'node:test';
import { runAndTamper } from '../../../test/fixtures/model-runs.js';

const SMALL = { arms: [{ name: 'q2k', scheme: 'q2k', window: 0, sinks: 0 }], context: 64, depths: [0.25, 0.9], needleTokens: 6, cue: 2, horizon: 4, horizons: [4] };

test('needles: tiny run passes, audits PASS, a flipped byte FAILs', (t) => runAndTamper(t, 'needles', SMALL));
