// Timing helpers for benchmarks: medians of repeated calls, never assertions. No Node imports: the browser
// benchmark (bench/browser.ts) bundles them into a Worker too.

/** Median seconds per call: warm up, then repeat until `budget` seconds or `maxReps` (at least minReps). */
export function timeMedian(fn: () => void, budget = 0.4, minReps = 3, maxReps = 50): number {
  fn();
  const times: number[] = [];
  const start = performance.now();
  while (times.length < minReps || (times.length < maxReps && (performance.now() - start) / 1000 < budget)) {
    const t0 = performance.now();
    fn();
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * Median seconds per call of each fn, the fns called in turn (one call each per repeat) so a machine whose
 * speed drifts slows all of them alike: warm up, then repeat until budget x fns.length seconds or maxReps.
 */
export function timeInterleaved(fns: ReadonlyArray<() => void>, budget = 0.4, minReps = 5, maxReps = 200): number[] {
  for (const fn of fns) fn();
  const times = fns.map(() => [] as number[]);
  const start = performance.now();
  while (times[0]!.length < minReps || (times[0]!.length < maxReps && (performance.now() - start) / 1000 < budget * fns.length)) {
    fns.forEach((fn, i) => {
      const t0 = performance.now();
      fn();
      times[i]!.push((performance.now() - t0) / 1000);
    });
  }
  return times.map(median);
}

/** Prints rows as an aligned text table. */
export function printTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  console.log(line(headers));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows) console.log(line(r));
}

export function flag(name: string): boolean {
  return process.argv.includes(name);
}

export function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Median of a non-empty list (mean of the middle two for even lengths). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Median CPU seconds per call of each fn, batches of ~budget/40 s alternated 21 times: CPU time, not wall
 * time, since other processes hold the cores of this machine now and then (Node: process.cpuUsage).
 */
export function cpuAlternated(fns: ReadonlyArray<() => void>, budget: number): number[] {
  for (const fn of fns) for (let i = 0; i < 3; i++) fn();
  const c0 = process.cpuUsage();
  fns[0]!();
  const one = Math.max(1e-6, (process.cpuUsage(c0).user + process.cpuUsage(c0).system) / 1e6);
  const batch = Math.max(1, Math.round(budget / 40 / one));
  const times = fns.map(() => [] as number[]);
  for (let r = 0; r < 21; r++) {
    fns.forEach((fn, i) => {
      const c = process.cpuUsage();
      for (let k = 0; k < batch; k++) fn();
      const d = process.cpuUsage(c);
      times[i]!.push((d.user + d.system) / 1e6 / batch);
    });
  }
  return times.map(median);
}
