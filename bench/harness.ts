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

/** What a bench flag takes: nothing (a switch), one integer / number / string, or a comma-separated list of them. */
export type OptKind = 'switch' | 'int' | 'num' | 'str' | 'ints' | 'nums' | 'strs';

/** One declared flag: its kind, the default shown by --help (the bench applies it), a one-line help. */
export interface OptSpec {
  kind: OptKind;
  help: string;
  default?: string | number;
  /** Integer kinds: the least value accepted. */
  min?: number;
  /** String kinds: the values accepted. */
  choices?: readonly string[];
}

export type OptSpecs = Readonly<Record<string, OptSpec>>;

// The flags of the running bench once declareOptions has checked argv: option() and flag() refuse others.
let declared: OptSpecs | null = null;

const INT = /^-?\d+$/;

/** Why `v` is not a value of `spec` (null when it is one). */
function badValue(name: string, spec: OptSpec, v: string): string | null {
  const parts = spec.kind === 'ints' || spec.kind === 'nums' || spec.kind === 'strs' ? v.split(',').filter((x) => x !== '') : [v];
  if (!parts.length) return `${name} expects a comma-separated list, got '${v}'`;
  for (const x of parts) {
    if ((spec.kind === 'int' || spec.kind === 'ints') && !INT.test(x.trim())) return `${name} expects an integer, got '${x}'`;
    if ((spec.kind === 'num' || spec.kind === 'nums') && (x.trim() === '' || !Number.isFinite(Number(x)))) return `${name} expects a number, got '${x}'`;
    if (spec.min !== undefined && Number(x) < spec.min) return `${name} must be at least ${spec.min}, got ${x}`;
    if (spec.choices && !spec.choices.includes(x)) return `${name}: '${x}' is not one of ${spec.choices.join(', ')}`;
  }
  return null;
}

/** Checks argv against the declared flags: 'help' for --help / -h, else the first problem in one line, or null. */
export function checkArgs(specs: OptSpecs, argv: readonly string[]): string | null {
  if (argv.includes('--help') || argv.includes('-h')) return 'help';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const spec = specs[a];
    if (!spec) return a.startsWith('-') ? `unknown flag ${a}` : `unexpected argument '${a}'`;
    if (spec.kind === 'switch') continue;
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) return `${a} expects a value`;
    const bad = badValue(a, spec, v);
    if (bad) return bad;
    i++;
  }
  return null;
}

/** The --help text: the command's line, then one line per flag. */
export function usage(cmd: string, about: string, specs: OptSpecs): string {
  const left = Object.entries(specs).map(([n, s]) => (s.kind === 'switch' ? n : `${n} <${s.kind}>`));
  const w = Math.max(0, ...left.map((l) => l.length));
  const lines = Object.values(specs).map((s, i) => {
    const extra = [s.choices ? `one of ${s.choices.join(', ')}` : '', s.default === undefined ? '' : `default ${s.default}`].filter(Boolean);
    return `  ${left[i]!.padEnd(w)}  ${s.help}${extra.length ? ` (${extra.join('; ')})` : ''}`;
  });
  return `usage: ${cmd} [flags]\n${about}\n\n${[...lines, `  ${'--help'.padEnd(w)}  this text`].join('\n')}\n`;
}

/**
 * A bench's flags, declared before it does anything: --help prints usage (exit 0); an unknown flag or a bad
 * value is one line on stderr and exit 2, so a typo never starts a multi-minute run with defaults.
 */
export function declareOptions(cmd: string, about: string, specs: OptSpecs, argv: readonly string[] = process.argv.slice(2)): void {
  const r = checkArgs(specs, argv);
  if (r === 'help') {
    process.stdout.write(usage(cmd, about, specs));
    process.exit(0);
  }
  if (r !== null) {
    process.stderr.write(`${cmd}: ${r} (--help lists the flags)\n`);
    process.exit(2);
  }
  declared = specs;
}

function known(name: string): void {
  if (declared && !(name in declared)) throw new Error(`bench reads flag ${name} it did not declare`);
}

export function flag(name: string): boolean {
  known(name);
  return process.argv.includes(name);
}

export function option(name: string): string | undefined {
  known(name);
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
