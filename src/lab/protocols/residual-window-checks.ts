// residual-window checks shared by run and audit: controls, byte formula, seed 003 byte figures, timing summary.
import { type CheckList, countFailures } from '../checks.js';
import type { ResidualWindowSpec, Comparison } from './residual-window-core.js';

export interface ControlRow {
  readonly input: string;
  /** relL2 of an all-f32 cache vs the reference: must be exactly 0. */
  readonly f32RelL2: number;
}

/** The checks a run records and an audit recomputes: controls, byte formula, seed 003's byte figures. */
export function residualWindowChecks(spec: ResidualWindowSpec, rows: readonly Comparison[], controls: readonly ControlRow[], checks: CheckList): void {
  checks.add(
    'control: an all-f32 cache reproduces the reference exactly (relL2 == 0)',
    ...countFailures(
      controls,
      (c) => c.f32RelL2 === 0,
      (c) => `${c.input} relL2 ${c.f32RelL2}`,
    ),
  );
  const quantized = rows.filter((r) => r.window < r.tokens);
  const fo = spec.controls.outputErrorFloor,
    fb = spec.controls.bulkErrorFloor;
  checks.add(
    `control: attention relL2 > ${fo} wherever positions are quantized`,
    ...countFailures(
      quantized,
      (r) => r.relL2 > fo,
      (r) => `${r.input} R=${r.window} relL2 ${r.relL2}`,
    ),
  );
  checks.add(
    `control: bulk K and V relL2 > ${fb} (quantization really applied)`,
    ...countFailures(
      quantized,
      (r) => r.bulkKRelL2 > fb && r.bulkVRelL2 > fb,
      (r) => `${r.input} R=${r.window} K ${r.bulkKRelL2} V ${r.bulkVRelL2}`,
    ),
  );
  checks.add(
    'bytes: formula (16 B header + padded groups + scales + f32 window) == file size',
    ...countFailures(
      rows,
      (r) => r.formulaBytes === r.fileBytes,
      (r) => `${r.input} R=${r.window}: ${r.fileBytes} on disk, formula ${r.formulaBytes}`,
    ),
  );
  const e = spec.expectedBytes;
  if (e && spec.lengths.includes(e.tokens)) {
    const sel = rows.filter((r) => r.tokens === e.tokens);
    const wins = Object.keys(e.byWindow)
      .map(Number)
      .filter((R) => spec.windows.includes(R));
    const got = wins.map((R) => sel.find((r) => r.window === R)!.fileBytes);
    const want = wins.map((R) => e.byWindow[R]!);
    const full = sel[0]!.f32FullBytes;
    checks.add(
      `bytes: seed 003 figures at N=${e.tokens} (${want.join(' / ')} B; f32 full ${e.f32Full} B)`,
      got.every((g, i) => g === want[i]) && full === e.f32Full,
      `got ${got.join(' / ')} B; f32 full ${full} B`,
    );
  }
}

export interface Timing {
  readonly input: string;
  readonly window: number;
  readonly method: 'blockwise' | 'whole';
  readonly rep: number;
  readonly ns: number;
}

export function timingSummary(timings: readonly Timing[], spec: ResidualWindowSpec) {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  return spec.lengths.map((tokens) => {
    const sel = (m: string) => timings.filter((t) => t.method === m && t.input.endsWith(`_n${tokens}`)).map((t) => t.ns);
    return {
      tokens,
      medianNsBlockwise: median(sel('blockwise')),
      medianNsWhole: median(sel('whole')),
      // Floats materialized at once: whole decode holds K and V [N, D]; block-wise one 32-token tile.
      decodedFloatsWhole: 2 * tokens * spec.headDim,
      decodedFloatsBlockwise: 32 * spec.headDim,
    };
  });
}

export function timingsCsv(t: readonly Timing[]): string {
  return 'input,window,method,rep,ns\n' + t.map((x) => `${x.input},${x.window},${x.method},${x.rep},${x.ns}`).join('\n') + '\n';
}

export function resultsCsv(rows: readonly Comparison[]): string {
  const cols = [
    'input',
    'distribution',
    'seed',
    'tokens',
    'window',
    'relL2',
    'massInWindow',
    'bulkKRelL2',
    'bulkVRelL2',
    'fileBytes',
    'formulaBytes',
    'f32FullBytes',
  ] as const;
  return cols.join(',') + '\n' + rows.map((r) => cols.map((c) => String(r[c])).join(',')).join('\n') + '\n';
}
