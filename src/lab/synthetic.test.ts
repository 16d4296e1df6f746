import { test } from 'node:test';
import assert from 'node:assert/strict';
import { synthesize, synthesizeLayer, splitChannelEnergy, channelRms, attentionWeights, applyRope } from './synthetic.js';
import { massInWindow } from './metrics.js';
import { ArgumentError } from '../errors.js';

test('same seed gives the same arrays; another seed differs', () => {
  const a = synthesize({ seed: 7, tokens: 64, headDim: 32 });
  const b = synthesize({ seed: 7, tokens: 64, headDim: 32 });
  const c = synthesize({ seed: 8, tokens: 64, headDim: 32 });
  assert.deepEqual(a.k, b.k);
  assert.notDeepEqual(a.k, c.k);
});

test('focus variants differ from clean only in channel 0 of Q and of the focused keys', () => {
  const base = { seed: 3, tokens: 128, headDim: 32 } as const;
  const clean = synthesize({ ...base, focus: 'clean' });
  for (const focus of ['early_focus', 'recent_focus'] as const) {
    const f = synthesize({ ...base, focus });
    assert.deepEqual(f.v, clean.v);
    const lo = focus === 'early_focus' ? 0 : 112;
    for (let t = 0; t < 128; t++) {
      for (let c = 0; c < 32; c++) {
        const changed = f.k[t * 32 + c] !== clean.k[t * 32 + c];
        assert.equal(changed, c === 0 && t >= lo && t < lo + 16, `${focus} t=${t} c=${c}`);
      }
    }
    for (let c = 1; c < 32; c++) assert.equal(f.q[c], clean.q[c]);
    assert.notEqual(f.q[0], clean.q[0]);
  }
  // The bias moves reference attention: recent focus puts most mass on the last 16 positions.
  const w = (s: ReturnType<typeof synthesize>) => attentionWeights(s.q, 0, s.k, 0, 128, 32);
  const recent = massInWindow(w(synthesize({ ...base, focus: 'recent_focus' })), 16);
  const cleanMass = massInWindow(w(clean), 16);
  const early = massInWindow(w(synthesize({ ...base, focus: 'early_focus' })), 16);
  assert.ok(recent > 0.5 && cleanMass < 0.3 && early < cleanMass, `${recent} ${cleanMass} ${early}`);
});

test('K channel RMS spread follows the parameter, through RoPE', () => {
  const s = synthesize({ seed: 1, tokens: 4096, headDim: 64, kOutlierSpread: 40, ropeTheta: 10000 });
  const rms = channelRms(s.k, 4096, 64);
  const spread = Math.max(...rms) / Math.min(...rms);
  assert.ok(spread > 30 && spread < 55, `spread ${spread}`);
  const flat = synthesize({ seed: 1, tokens: 4096, headDim: 64 });
  const r2 = channelRms(flat.k, 4096, 64);
  assert.ok(Math.max(...r2) / Math.min(...r2) < 1.2);
});

test('sink tokens draw large attention to position 0', () => {
  const s = synthesize({ seed: 2, tokens: 256, headDim: 32, sinkTokens: 1, sinkLogit: 8, ropeTheta: 10000, queries: 4, heads: 2, kvHeads: 1 });
  for (let i = 0; i < 4 * 2; i++) {
    const w = attentionWeights(s.q, i * 32, s.k, 0, 256, 32);
    assert.ok(w[0]! > 0.3, `query ${i}: mass at 0 is ${w[0]}`);
  }
  assert.deepEqual([...s.positions], [252, 253, 254, 255]);
});

test('RoPE preserves norms and is the identity at position 0', () => {
  const x = new Float32Array([1, 2, 3, 4]);
  applyRope(x, 0, 4, 0, 10000);
  assert.deepEqual([...x], [1, 2, 3, 4]);
  applyRope(x, 0, 4, 5, 10000);
  assert.ok(Math.abs(Math.hypot(...x) - Math.hypot(1, 2, 3, 4)) < 1e-5);
});

test('bad specs throw ArgumentError', () => {
  assert.throws(() => synthesize({ seed: 1, tokens: 0, headDim: 32 }), ArgumentError);
  assert.throws(() => synthesize({ seed: 1, tokens: 8, headDim: 31 }), ArgumentError);
  assert.throws(() => synthesize({ seed: 1, tokens: 8, headDim: 32, focus: 'early_focus' }), ArgumentError);
});

test('synthesizeLayer hits its statistic targets (measured the way the protocol reports them)', async () => {
  const { layerStatistics } = await import('./protocols/bit-allocation-stats.js');
  for (const [spread, share] of [
    [5.8, 0.061],
    [74.9, 0.995],
  ] as const) {
    const g = synthesizeLayer({
      seed: 4,
      tokens: 256,
      headDim: 64,
      heads: 2,
      kvHeads: 1,
      queries: 4,
      ropeTheta: 10000,
      kChannelRmsSpread: spread,
      kMeanEnergyFraction: share,
      vChannelRmsSpread: 7.9,
      vMeanEnergyFraction: 0.14,
      entropyNormalized: 0.5,
    });
    const s = layerStatistics({
      name: 'x',
      source: 'synthetic',
      tokens: 256,
      heads: 2,
      kvHeads: 1,
      headDim: 64,
      q: g.q,
      positions: g.positions,
      k: g.k,
      v: g.v,
    });
    assert.ok(Math.abs(s.entropyNormalized - 0.5) < 0.01, `entropy ${s.entropyNormalized}`);
    assert.ok(Math.abs(s.kMeanEnergyFraction - share) < 0.03, `K share ${s.kMeanEnergyFraction} vs ${share}`);
    assert.ok(Math.abs(s.vMeanEnergyFraction - 0.14) < 0.03, `V share ${s.vMeanEnergyFraction}`);
    // Sampled channel RMS spread lands near the target (finite tokens: within 25%).
    assert.ok(Math.abs(s.kChannelRmsSpread / spread - 1) < 0.25, `K spread ${s.kChannelRmsSpread} vs ${spread}`);
    assert.ok(Math.abs(s.vChannelRmsSpread / 7.9 - 1) < 0.25, `V spread ${s.vChannelRmsSpread}`);
  }
});

test('splitChannelEnergy: offsets hold the asked share, large channels first; impossible shares throw', () => {
  const r = Float64Array.from({ length: 16 }, (_, i) => 1 + i);
  const { offset, std } = splitChannelEnergy(r, 0.5);
  const e = r.reduce((s, x) => s + x * x, 0);
  assert.ok(Math.abs(offset.reduce((s, x) => s + x * x, 0) / e - 0.5) < 1e-9);
  r.forEach((x, c) => assert.ok(Math.abs(offset[c]! ** 2 + std[c]! ** 2 - x * x) < 1e-9));
  assert.equal(offset[0], 0);
  assert.ok(offset[15]! / r[15]! > offset[1]! / r[1]!);
  assert.throws(() => splitChannelEnergy(Float64Array.from([1, 1, 1]), 0.5), ArgumentError);
});
