// bit-allocation (seed 000): spec, layers (synthetic or captured), and the per-arm computation shared by run and audit.
import { synthesize, synthesizeLayer } from '../synthetic.js';
import { relRms, relL2 } from '../metrics.js';
import { attendDense } from '../dense.js';
import type { CapturedLayer } from '../capture.js';
import { attendReference } from '../../kernels/attention/reference.js';
import type { MixedView } from '../../kernels/attention/view.js';
import { encode, decode } from '../../formats/codec.js';
import { bytesFor, type KvFormat } from '../../formats/format.js';
import { getFormat } from '../../formats/registry.js';
import { obj, num, str, isPosInt, isNonNegInt, type Json } from '../spec.js';
import { FileFormatError } from '../../errors.js';

export interface Arm {
  readonly name: string;
  readonly k: string;
  readonly v: string;
  readonly note: string;
}

/** Version 1 layers (kept so archived v1 runs still audit): generator knobs, not measured targets. */
export interface SyntheticLayerV1 {
  readonly name: string;
  readonly kOutlierSpread: number;
  readonly vChannelSpread: number;
  readonly kChannelMean: number;
  readonly vChannelMean: number;
}

/** Version 2 layers: each field a statistic `layerStatistics` measures back; `source` says where it came from. */
export interface SyntheticLayerV2 {
  readonly name: string;
  readonly kChannelRmsSpread: number;
  readonly kMeanEnergyFraction: number;
  readonly vChannelRmsSpread: number;
  readonly vMeanEnergyFraction: number;
  readonly entropyNormalized: number;
  readonly source: string;
}

export type SyntheticLayerSpec = SyntheticLayerV1 | SyntheticLayerV2;
const isV2 = (l: SyntheticLayerSpec): l is SyntheticLayerV2 => 'kChannelRmsSpread' in l;

export interface BitAllocationSpec {
  readonly name: 'bit-allocation';
  /** 1: generator knobs (its layers missed their own stated spreads); 2: measured-statistics presets + statistics.json. */
  readonly version: 1 | 2 | 3;
  readonly arms: readonly Arm[];
  /** Must reproduce the reference exactly (negative control). */
  readonly controlArm: Arm;
  readonly synthetic: {
    readonly seed: number;
    readonly tokens: number;
    readonly headDim: number;
    readonly heads: number;
    readonly kvHeads: number;
    readonly queries: number;
    readonly ropeTheta: number;
    readonly sinkTokens: number;
    readonly sinkLogit: number;
    readonly layers: readonly SyntheticLayerSpec[];
  };
  /** Decode queries taken from the end of a captured layer. */
  readonly captureQueries: number;
  /** Cell shape for the bytes-per-cell column (seed 000: 2 kv heads x 256 dims; q4_0 = 576 B, q2k = 448 B). */
  readonly cellShape: { readonly kvHeads: number; readonly headDim: number };
  readonly controls: { readonly errorFloor: number };
  readonly tolerance: number;
}

function arm(x: unknown, field: string): Arm {
  const o = obj(x, field);
  return { name: str(o, 'name'), k: str(o, 'k'), v: str(o, 'v'), note: typeof o.note === 'string' ? o.note : '' };
}

export function parseBitAllocation(json: unknown): BitAllocationSpec {
  const o = obj(json, 'protocol');
  if (str(o, 'name') !== 'bit-allocation') throw new FileFormatError('protocol', 'name must be bit-allocation');
  if (!Array.isArray(o.arms) || o.arms.length === 0) throw new FileFormatError('protocol', "field 'arms' must be a non-empty array");
  const s = obj(o.synthetic, 'synthetic');
  if (!Array.isArray(s.layers) || s.layers.length === 0) throw new FileFormatError('protocol', "field 'synthetic.layers' must be a non-empty array");
  const c = obj(o.controls, 'controls');
  const cell = obj(o.cellShape, 'cellShape');
  const arms = o.arms.map((a, i) => arm(a, `arms[${i}]`));
  // Version 3 has version 2's fields (its presets were re-measured on the canonical stories260K).
  const version = num(o, 'version', (x) => x === 1 || x === 2 || x === 3) as 1 | 2 | 3;
  if (new Set(arms.map((a) => a.name)).size !== arms.length) throw new FileFormatError('protocol', 'arm names must be unique');
  return {
    name: 'bit-allocation',
    version,
    arms,
    controlArm: arm(o.controlArm, 'controlArm'),
    synthetic: {
      seed: num(s, 'seed', isNonNegInt),
      tokens: num(s, 'tokens', isPosInt),
      headDim: num(s, 'headDim', isPosInt),
      heads: num(s, 'heads', isPosInt),
      kvHeads: num(s, 'kvHeads', isPosInt),
      queries: num(s, 'queries', isPosInt),
      ropeTheta: num(s, 'ropeTheta', (x) => x >= 0),
      sinkTokens: num(s, 'sinkTokens', isNonNegInt),
      sinkLogit: num(s, 'sinkLogit'),
      layers: s.layers.map((l: unknown, i: number) => {
        const lo = obj(l, `synthetic.layers[${i}]`) as Json;
        if (version === 1)
          return {
            name: str(lo, 'name'),
            kOutlierSpread: num(lo, 'kOutlierSpread', (x) => x >= 1),
            vChannelSpread: num(lo, 'vChannelSpread', (x) => x >= 1),
            kChannelMean: num(lo, 'kChannelMean'),
            vChannelMean: num(lo, 'vChannelMean'),
          };
        const share = (x: number) => x >= 0 && x < 1;
        return {
          name: str(lo, 'name'),
          kChannelRmsSpread: num(lo, 'kChannelRmsSpread', (x) => x >= 1),
          kMeanEnergyFraction: num(lo, 'kMeanEnergyFraction', share),
          vChannelRmsSpread: num(lo, 'vChannelRmsSpread', (x) => x >= 1),
          vMeanEnergyFraction: num(lo, 'vMeanEnergyFraction', share),
          entropyNormalized: num(lo, 'entropyNormalized', (x) => x > 0 && x <= 1),
          source: str(lo, 'source'),
        };
      }),
    },
    captureQueries: num(o, 'captureQueries', isPosInt),
    cellShape: { kvHeads: num(cell, 'kvHeads', isPosInt), headDim: num(cell, 'headDim', isPosInt) },
    controls: { errorFloor: num(c, 'errorFloor', (x) => x >= 0) },
    tolerance: num(o, 'tolerance', (x) => x >= 0),
  };
}

/** One layer's attention inputs, whatever their source. */
export interface LayerInput {
  readonly name: string;
  readonly source: 'synthetic' | 'capture';
  readonly tokens: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** [queries, heads, headDim] */
  readonly q: Float32Array;
  /** Absolute position of each query (causal). */
  readonly positions: Int32Array;
  /** [kvHeads, tokens, headDim] */
  readonly k: Float32Array;
  readonly v: Float32Array;
}

/** Synthetic layer i: the shared shape, each layer its own seed and outlier spread. */
export function syntheticLayer(spec: BitAllocationSpec, i: number): LayerInput {
  const s = spec.synthetic;
  const l = s.layers[i]!;
  const shape = {
    seed: s.seed * 1000 + i,
    tokens: s.tokens,
    headDim: s.headDim,
    heads: s.heads,
    kvHeads: s.kvHeads,
    queries: s.queries,
    ropeTheta: s.ropeTheta,
    sinkTokens: s.sinkTokens,
    sinkLogit: s.sinkLogit,
  };
  const g = isV2(l)
    ? synthesizeLayer({ ...shape, ...l })
    : synthesize({ ...shape, kOutlierSpread: l.kOutlierSpread, vChannelSpread: l.vChannelSpread, kChannelMean: l.kChannelMean, vChannelMean: l.vChannelMean });
  return {
    name: l.name,
    source: 'synthetic',
    tokens: s.tokens,
    heads: s.heads,
    kvHeads: s.kvHeads,
    headDim: s.headDim,
    q: g.q,
    positions: g.positions,
    k: g.k,
    v: g.v,
  };
}

/** A captured layer probed with its last `queries` query rows (decode steps at the end of the prompt). */
export function capturedLayer(l: CapturedLayer, queries: number): LayerInput {
  const nq = Math.min(queries, l.tokens);
  const positions = new Int32Array(nq);
  for (let i = 0; i < nq; i++) positions[i] = l.tokens - nq + i;
  const q = l.q.slice((l.tokens - nq) * l.heads * l.headDim);
  return {
    name: `capture-L${l.layer}`,
    source: 'capture',
    tokens: l.tokens,
    heads: l.heads,
    kvHeads: l.kvHeads,
    headDim: l.headDim,
    q,
    positions,
    k: l.k,
    v: l.v,
  };
}

/** Encodes each kv head's [tokens, headDim] array and concatenates the heads. */
export function encodeHeads(format: string, x: Float32Array, kvHeads: number, N: number, D: number): Uint8Array {
  const per = bytesFor(getFormat(format), N, D);
  const out = new Uint8Array(per * kvHeads);
  for (let h = 0; h < kvHeads; h++) out.set(encode(format, x.subarray(h * N * D, (h + 1) * N * D), [N, D]), h * per);
  return out;
}

function decodeHeads(format: string, bytes: Uint8Array, kvHeads: number, N: number, D: number): Float32Array {
  const per = bytesFor(getFormat(format), N, D);
  const out = new Float32Array(kvHeads * N * D);
  for (let h = 0; h < kvHeads; h++) out.set(decode(format, bytes.subarray(h * per, (h + 1) * per), N * D, [N, D]), h * N * D);
  return out;
}

/** Float attention over the unquantized arrays (causal, GQA): the reference output [queries, heads, D]. */
export function referenceOutput(L: LayerInput): Float32Array {
  const { heads, kvHeads, headDim: D, tokens: N } = L;
  const out = new Float32Array(L.q.length);
  const group = heads / kvHeads;
  const o = new Float32Array(D);
  for (let i = 0; i < L.positions.length; i++) {
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / group);
      const n = L.positions[i]! + 1;
      attendDense(L.q.subarray((i * heads + h) * D), L.k.subarray(kvh * N * D), L.v.subarray(kvh * N * D), n, D, o);
      out.set(o, (i * heads + h) * D);
    }
  }
  return out;
}

/** Attention straight over the packed K/V bytes (the reference kernel over a one-segment view). */
export function packedOutput(L: LayerInput, kFormat: string, vFormat: string, kBytes: Uint8Array, vBytes: Uint8Array): Float32Array {
  const { kvHeads, headDim: D, tokens: N } = L;
  const K = getFormat(kFormat),
    V = getFormat(vFormat);
  const run = (f: KvFormat, bytes: Uint8Array) => ({ format: f, bytes, offset: 0, headStride: bytesFor(f, N, D), first: 0 });
  const view: MixedView = { headDim: D, kvHeads, length: N, segments: [{ start: 0, count: N, k: run(K, kBytes), v: run(V, vBytes), region: 'bulk' }] };
  const out = new Float32Array(L.q.length);
  attendReference({ view, q: L.q, heads: L.heads, out, positions: L.positions });
  return out;
}

/** Bytes one token adds per kv head in a format, amortized over whole groups (channel formats). */
export function bytesPerToken(format: string, D: number): number {
  const f = getFormat(format);
  return f.axis === 'token' ? bytesFor(f, 1, D) : (D * f.blockBytes) / f.blockValues;
}

/** Bytes of one cell (one token's K + V in one layer) at a cell shape. */
export function bytesPerCell(a: Arm, kvHeads: number, D: number): number {
  return kvHeads * (bytesPerToken(a.k, D) + bytesPerToken(a.v, D));
}

export interface ArmResult {
  readonly layer: string;
  readonly source: LayerInput['source'];
  readonly arm: string;
  readonly kFormat: string;
  readonly vFormat: string;
  /** Attention-output relative RMS vs float attention over the unquantized arrays (seed 000's probe). */
  readonly relRms: number;
  /** relL2 of decoded K and V vs the originals. */
  readonly kRelL2: number;
  readonly vRelL2: number;
  readonly kBytes: number;
  readonly vBytes: number;
  /** kvHeads x (bytesFor(K format) + bytesFor(V format)) at this layer's shape: must equal kBytes + vBytes. */
  readonly formulaBytes: number;
  /** Cell bytes at this layer's shape, and effective bits per K/V element (scales included). */
  readonly bytesPerCell: number;
  readonly effectiveBits: number;
}

/**
 * Every number for one layer x arm, from the input arrays and the packed bytes as saved. `stored` names the
 * formats the bytes are really in (differs from the arm only under the sabotage test hook).
 */
export function evaluateArm(L: LayerInput, a: Arm, kBytes: Uint8Array, vBytes: Uint8Array, ref: Float32Array, stored: { k: string; v: string } = a): ArmResult {
  const { kvHeads, tokens: N, headDim: D } = L;
  const got = packedOutput(L, stored.k, stored.v, kBytes, vBytes);
  const cell = bytesPerCell(a, kvHeads, D);
  return {
    layer: L.name,
    source: L.source,
    arm: a.name,
    kFormat: a.k,
    vFormat: a.v,
    relRms: relRms(got, ref),
    kRelL2: relL2(decodeHeads(stored.k, kBytes, kvHeads, N, D), L.k),
    vRelL2: relL2(decodeHeads(stored.v, vBytes, kvHeads, N, D), L.v),
    kBytes: kBytes.length,
    vBytes: vBytes.length,
    formulaBytes: kvHeads * (bytesFor(getFormat(a.k), N, D) + bytesFor(getFormat(a.v), N, D)),
    bytesPerCell: cell,
    effectiveBits: (cell * 8) / (2 * kvHeads * D),
  };
}

export interface ArmSummary {
  readonly arm: string;
  readonly k: string;
  readonly v: string;
  readonly note: string;
  /** Bytes per cell at spec.cellShape (seed 000's 2 x 256). */
  readonly bytesPerCell: number;
  readonly effectiveBits: number;
  /** layer -> relRms */
  readonly relRms: Record<string, number>;
  readonly relRmsMean: number;
}

export function summarize(spec: BitAllocationSpec, rows: readonly ArmResult[]): ArmSummary[] {
  const { kvHeads, headDim } = spec.cellShape;
  return [...spec.arms, spec.controlArm].map((a) => {
    const sel = rows.filter((r) => r.arm === a.name);
    const relRmsBy: Record<string, number> = {};
    for (const r of sel) relRmsBy[r.layer] = r.relRms;
    const cell = bytesPerCell(a, kvHeads, headDim);
    return {
      arm: a.name,
      k: a.k,
      v: a.v,
      note: a.note,
      bytesPerCell: cell,
      effectiveBits: (cell * 8) / (2 * kvHeads * headDim),
      relRms: relRmsBy,
      relRmsMean: sel.reduce((s, r) => s + r.relRms, 0) / sel.length,
    };
  });
}

export function headline(spec: BitAllocationSpec, s: readonly ArmSummary[]): string[] {
  const layers = Object.keys(s[0]!.relRms);
  const { kvHeads, headDim } = spec.cellShape;
  return [
    `| arm | K | V | B/cell (${kvHeads}x${headDim}) | eff. bits | ${layers.join(' | ')} | mean |`,
    `|---|---|---|---:|---:|${layers.map(() => '---:').join('|')}|---:|`,
    ...s.map(
      (a) =>
        `| ${a.arm} | ${a.k} | ${a.v} | ${a.bytesPerCell} | ${a.effectiveBits.toFixed(3)} | ${layers.map((l) => `${(100 * a.relRms[l]!).toFixed(3)}%`).join(' | ')} | ${(100 * a.relRmsMean).toFixed(3)}% |`,
    ),
  ];
}

/** Saved as inputs/index.json: which layers were probed and where their arrays are. */
export interface LayerIndex {
  readonly name: string;
  readonly source: LayerInput['source'];
  /** inputs/<name>.f32 (synthetic) or the capture file plus the layer number. */
  readonly file: string;
  readonly captureLayer?: number;
}

export const CAPTURE_COPY = 'inputs/capture.kvcap';
export const layerFile = (name: string) => `inputs/${name}.f32`;
export const cacheFile = (layer: string, arm: string, which: 'k' | 'v') => `caches/${layer}_${arm.replace(/[^A-Za-z0-9_.-]/g, '_')}.${which}.bin`;

export function resultsCsv(rows: readonly ArmResult[]): string {
  const cols = [
    'layer',
    'source',
    'arm',
    'kFormat',
    'vFormat',
    'relRms',
    'kRelL2',
    'vRelL2',
    'kBytes',
    'vBytes',
    'formulaBytes',
    'bytesPerCell',
    'effectiveBits',
  ] as const;
  return cols.join(',') + '\n' + rows.map((r) => cols.map((c) => String(r[c])).join(',')).join('\n') + '\n';
}
