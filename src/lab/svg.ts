// Inline SVG charts for the lab report: no external assets, deterministic text output.

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [x: number, y: number])[];
}

const W = 560,
  H = 300,
  L = 60,
  R = 150,
  T = 20,
  B = 40;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#7f7f7f'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function ticks(lo: number, hi: number, n = 5): number[] {
  const step = (hi - lo) / n;
  return [...Array(n + 1).keys()].map((i) => lo + i * step);
}

// Small values keep their digits (an axis of 1e-5 steps must not read 0.00 at every tick).
const fmt = (x: number) =>
  Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : Math.abs(x) >= 0.01 || x === 0 ? x.toFixed(2) : x.toExponential(1);
/** Axis top: 10% above the largest value; an all-zero axis spans [0, 1] so its ticks stay distinct. */
const top = (values: readonly number[], pad: number) => {
  const m = Math.max(...values, 0);
  return m > 0 ? m * pad : 1;
};

function frame(title: string, xLabel: string, yLabel: string, x0: number, x1: number, y0: number, y1: number, body: string, legend: string[]): string {
  const px = (x: number) => L + ((x - x0) / (x1 - x0 || 1)) * (W - L - R);
  const py = (y: number) => H - B - ((y - y0) / (y1 - y0 || 1)) * (H - T - B);
  const axes = [
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/>`,
    `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`,
    ...ticks(x0, x1).map((x) => `<text x="${px(x).toFixed(1)}" y="${H - B + 14}" font-size="10" text-anchor="middle">${fmt(x)}</text>`),
    ...ticks(y0, y1).map(
      (y) =>
        `<text x="${L - 4}" y="${(py(y) + 3).toFixed(1)}" font-size="10" text-anchor="end">${fmt(y)}</text><line x1="${L}" y1="${py(y).toFixed(1)}" x2="${W - R}" y2="${py(y).toFixed(1)}" stroke="#eee"/>`,
    ),
    `<text x="${(L + W - R) / 2}" y="${H - 6}" font-size="11" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text x="14" y="${(T + H - B) / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 14 ${(T + H - B) / 2})">${esc(yLabel)}</text>`,
    `<text x="${L}" y="13" font-size="12" font-weight="bold">${esc(title)}</text>`,
  ];
  const leg = legend.map(
    (name, i) =>
      `<rect x="${W - R + 10}" y="${T + i * 16}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${W - R + 24}" y="${T + i * 16 + 9}" font-size="10">${esc(name)}</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">${[...axes, body, ...leg].join('')}</svg>`;
}

/** Points (and joining lines when `lines`) per series; axes start at 0 so ratios read honestly. */
export function scatterChart(title: string, xLabel: string, yLabel: string, series: readonly Series[], lines = false): string {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const x1 = top(xs, 1.05),
    y1 = top(ys, 1.1);
  const px = (x: number) => L + (x / x1) * (W - L - R);
  const py = (y: number) => H - B - (y / y1) * (H - T - B);
  const body = series
    .map((s, i) => {
      const c = COLORS[i % COLORS.length];
      const pts = s.points
        .map(
          ([x, y]) =>
            `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3.5" fill="${c}"><title>${esc(s.name)}: ${fmt(x)}, ${fmt(y)}</title></circle>`,
        )
        .join('');
      const path =
        lines && s.points.length > 1
          ? `<polyline fill="none" stroke="${c}" points="${s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ')}"/>`
          : '';
      return path + pts;
    })
    .join('');
  return frame(
    title,
    xLabel,
    yLabel,
    0,
    x1,
    0,
    y1,
    body,
    series.map((s) => s.name),
  );
}

/** Grouped bars: one group per category, one bar per series (values in the same order as categories). */
export function barChart(title: string, yLabel: string, categories: readonly string[], series: readonly { name: string; values: readonly number[] }[]): string {
  const y1 = top(
    series.flatMap((s) => s.values),
    1.1,
  );
  const gw = (W - L - R) / categories.length;
  const bw = (gw * 0.8) / series.length;
  const py = (y: number) => H - B - (y / y1) * (H - T - B);
  const bars = series
    .map((s, i) =>
      s.values
        .map((v, g) => {
          const x = L + g * gw + gw * 0.1 + i * bw;
          return `<rect x="${x.toFixed(1)}" y="${py(v).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${(H - B - py(v)).toFixed(1)}" fill="${COLORS[i % COLORS.length]}"><title>${esc(s.name)} ${esc(categories[g]!)}: ${fmt(v)}</title></rect>`;
        })
        .join(''),
    )
    .join('');
  const labels = categories
    .map((c, g) => `<text x="${(L + g * gw + gw / 2).toFixed(1)}" y="${H - B + 26}" font-size="10" text-anchor="middle">${esc(c)}</text>`)
    .join('');
  // The x axis carries category names, so the numeric x ticks are hidden behind a white band.
  return frame(
    title,
    '',
    yLabel,
    0,
    1,
    0,
    y1,
    `<rect x="${L - 10}" y="${H - B + 2}" width="${W - L - R + 20}" height="14" fill="#fff"/>` + bars + labels,
    series.map((s) => s.name),
  );
}
