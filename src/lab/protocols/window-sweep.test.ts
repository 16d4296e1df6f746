import { test } from 'node:test';
import { runAndTamper, sabotaged } from '../../../test/fixtures/model-runs.js';

const SMALL = { schemes: ['q4_0', 'q2k'], windows: [0, 128], prompts: { count: 1, length: 40, seedTokens: 4, seed: 1 }, horizon: 12, horizons: [5, 12] };

test('window-sweep: tiny run passes its controls, audits PASS, a flipped byte FAILs', (t) => runAndTamper(t, 'window-sweep', SMALL));
test('window-sweep: quantization secretly disabled fires the read-back and bytes controls', (t) => sabotaged(t, 'window-sweep', { ...SMALL, windows: [0] }));
