// Report charts of the model protocols (window sweep, anchors, per-layer stored error), from saved run files.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { barChart, scatterChart } from './svg.js';
import { klLabel, type ArmScore } from './eval.js';
import type { ArmRecord } from './protocols/model-runs.js';
import type { AnchorArm } from './protocols/anchors-core.js';

const json = <T>(dir: string, rel: string) => JSON.parse(readFileSync(join(dir, rel), 'utf8')) as T;

/** Per-layer stored K and V relL2 (read back from the cache) of each quantized arm without exact regions. */
function layerErrorChart(name: string, records: readonly ArmRecord[]): string {
  const arms = records.filter(
    (r) => (r.arm.policy.window ?? 0) === 0 && !r.arm.policy.anchors && r.outcomes[0]?.layerErrors?.some((e) => e.quantizedK || e.quantizedV),
  );
  const layers = arms[0]?.outcomes[0]?.layerErrors?.map((e) => `L${e.layer}`) ?? [];
  const bars = arms.flatMap((r) =>
    (['k', 'v'] as const).map((w) => ({
      name: `${r.arm.name} ${w.toUpperCase()}`,
      values: r.outcomes[0]!.layerErrors!.map((e) => 100 * (w === 'k' ? e.kRelL2 : e.vRelL2)),
    })),
  );
  return barChart(`${name}: per-layer stored K/V error (read back from the cache)`, 'relL2 stored vs appended (%)', layers, bars);
}

function windowSweepCharts(dir: string): string[] {
  const scores = json<ArmScore[]>(dir, 'results.json');
  const records = json<ArmRecord[]>(dir, 'runs.json');
  const arms = records.map((r) => r.arm).filter((a) => a.name.includes('/w'));
  const schemes = [...new Set(arms.map((a) => a.name.split('/')[0]!))];
  const windows = [...new Set(arms.map((a) => a.name.split('/w')[1]!))];
  const by = new Map(scores.map((s) => [s.arm, s]));
  return [
    barChart(
      'window-sweep: mean KL vs the f16 cache by exact window',
      `${klLabel(scores, 'KL mean')} (nats)`,
      windows.map((w) => `W=${w}`),
      schemes.map((s) => ({ name: s, values: windows.map((w) => by.get(`${s}/w${w}`)!.kl) })),
    ),
    scatterChart(
      'window-sweep: KL vs effective bits',
      'effective bits per K/V element (real bytes)',
      `${klLabel(scores, 'KL mean')} (nats)`,
      schemes.map((s) => ({ name: s, points: windows.map((w) => [by.get(`${s}/w${w}`)!.effectiveBits, by.get(`${s}/w${w}`)!.kl] as const) })),
      true,
    ),
    layerErrorChart('window-sweep', records),
  ];
}

function anchorsCharts(dir: string): string[] {
  const scores = json<ArmScore[]>(dir, 'results.json');
  const arms = json<AnchorArm[]>(dir, 'arms.json');
  const by = new Map(scores.map((s) => [s.arm, s]));
  const h = Math.max(...Object.keys(scores[0]!.exactAt).map(Number));
  const schemes = [...new Set(arms.map((a) => a.scheme))];
  return [
    // No exact-match chart when the horizon reaches no exact-match horizon.
    ...(!Number.isFinite(h)
      ? []
      : [
          scatterChart(
            `anchors: exact-match@${h} vs effective bits`,
            'effective bits per K/V element (real bytes)',
            `exact-match @${h} (%)`,
            schemes.map((s) => ({
              name: s,
              points: arms.filter((a) => a.scheme === s).map((a) => [by.get(a.name)!.effectiveBits, 100 * by.get(a.name)!.exactAt[h]!] as const),
            })),
          ),
        ]),
    barChart(
      'anchors: mean matched prefix by arm',
      'matched greedy prefix (tokens)',
      arms.filter((a) => a.scheme === schemes[0]).map((a) => a.name.split('/')[1]!),
      schemes.map((s) => ({
        name: s,
        values: arms.filter((a) => a.scheme === schemes[0]).map((a) => by.get(`${s}/${a.name.split('/')[1]}`)?.prefixMean ?? 0),
      })),
    ),
  ];
}

function needlesCharts(dir: string): string[] {
  return [layerErrorChart('needles', json<ArmRecord[]>(dir, 'runs.json'))];
}

/** live-cache: per-layer attention relRms vs f16 (mean over prompts) per arm, and KL vs effective bits. */
function liveCacheCharts(dir: string): string[] {
  const records = json<ArmRecord[]>(dir, 'runs.json').filter((r) => r.arm.name !== 'control-f16');
  const scores = json<ArmScore[]>(dir, 'results.json');
  const by = new Map(scores.map((s) => [s.arm, s]));
  const layers = records[0]?.outcomes[0]?.attention?.map((a) => `L${a.layer}`) ?? [];
  const mean = (r: ArmRecord, l: number) => (100 * r.outcomes.reduce((s, o) => s + o.attention![l]!.vsF16RelRms, 0)) / r.outcomes.length;
  return [
    barChart(
      'live-cache: per-layer attention error vs f16 (live cache, last decode step)',
      'attention relRms (%)',
      layers,
      records.map((r) => ({ name: r.arm.name, values: layers.map((_, l) => mean(r, l)) })),
    ),
    scatterChart(
      'live-cache: KL (decode rows) vs effective bits',
      'effective bits per K/V element (real bytes)',
      'KL decode (nats)',
      records.map((r) => ({ name: r.arm.name, points: [[by.get(r.arm.name)!.effectiveBits, by.get(r.arm.name)!.klDecode ?? 0]] })),
    ),
  ];
}

/** Charts for a model protocol's section; [] for other names. */
export function modelCharts(name: string, dir: string): string[] {
  if (name === 'window-sweep') return windowSweepCharts(dir);
  if (name === 'anchors') return anchorsCharts(dir);
  if (name === 'needles') return needlesCharts(dir);
  if (name === 'live-cache') return liveCacheCharts(dir);
  return [];
}
