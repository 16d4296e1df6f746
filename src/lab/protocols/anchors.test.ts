import { test } from 'node:test';
import { runAndTamper } from '../../../test/fixtures/model-runs.js';

const SMALL = {
  schemes: ['q4_0'],
  sweeps: [{ counts: [0, 4], precisions: ['f16', 'int8'], layerSets: ['all', 'probe', 'layer0'] }],
  probe: { layers: 1, sequences: { count: 1, length: 40, seedTokens: 4, seed: 7 } },
  prompts: { count: 1, length: 24, seedTokens: 4, seed: 2 },
  horizon: 12,
  horizons: [5, 12],
};

test('anchors: tiny run (probe-chosen layers included) passes, audits PASS, a flipped byte FAILs', (t) => runAndTamper(t, 'anchors', SMALL));
