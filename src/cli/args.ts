// Flag parsers shared by subcommands: out-of-range values fail with a message naming the flag.
import { InvalidArgumentError } from 'commander';
import { ArgumentError } from '../errors.js';

/** Parser for an integer flag in [min, max]. */
export function intArg(flag: string, min: number, max = Number.MAX_SAFE_INTEGER): (v: string) => number {
  return (v: string) => {
    const x = Number(v);
    if (!/^-?\d+$/.test(v.trim()) || !Number.isSafeInteger(x)) throw new InvalidArgumentError(`${flag} expects an integer, got '${v}'`);
    if (x < min || x > max) throw new InvalidArgumentError(`${flag} must be in [${min}, ${max}], got ${x}`);
    return x;
  };
}

/** Parser for a finite number flag in [min, max]. */
export function numArg(flag: string, min: number, max: number): (v: string) => number {
  return (v: string) => {
    const x = Number(v);
    if (v.trim() === '' || !Number.isFinite(x)) throw new InvalidArgumentError(`${flag} expects a number, got '${v}'`);
    if (x < min || x > max) throw new InvalidArgumentError(`${flag} must be in [${min}, ${max}], got ${x}`);
    return x;
  };
}

/** Parser for a comma-separated list of integers, e.g. `--layers 3,11`. */
export function intListArg(flag: string, min: number, max = Number.MAX_SAFE_INTEGER): (v: string) => number[] {
  const one = intArg(flag, min, max);
  return (v: string) =>
    v
      .split(',')
      .filter((s) => s.trim() !== '')
      .map((s) => one(s.trim()));
}

/**
 * llama.cpp spells some flags with multi-letter single dashes (-ctk); commander wants long flags. `--window`
 * is the older spelling of `--kv-window` (every command that builds a cache spells it the llama.cpp way).
 */
const ALIASES: Record<string, string> = {
  '-ctk': '--cache-type-k',
  '-ctv': '--cache-type-v',
  '--window': '--kv-window',
  // llama-server's
  '-np': '--parallel',
  '-cram': '--cache-ram',
  '-to': '--timeout',
  '-ub': '--ubatch-size',
  '-nocb': '--no-cont-batching',
};

/** llama.cpp flags kvpack has nothing behind: a clear error instead of commander reading `-ngl` as `-n gl`. */
const UNSUPPORTED: Record<string, string> = {
  '-ngl': 'kvpack runs on the CPU: there are no GPU layers to offload (drop -ngl)',
  '--n-gpu-layers': 'kvpack runs on the CPU: there are no GPU layers to offload (drop --n-gpu-layers)',
};

export function normalizeArgv(argv: string[]): string[] {
  return argv.map((a) => {
    const [flag, value] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('='))] : [a, ''];
    if (flag in UNSUPPORTED) throw new ArgumentError(UNSUPPORTED[flag]!);
    return flag in ALIASES ? ALIASES[flag]! + value : a;
  });
}

/** Renders rows as an aligned text table (first row = header). */
export function table(rows: (string | number)[][]): string {
  const cells = rows.map((r) => r.map(String));
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  // Numbers align right, text left.
  const numeric = widths.map((_, i) => cells.slice(1).every((r) => /^[-+]?[\d.,]+(\s?\S{0,3})?$/.test(r[i] ?? '') || (r[i] ?? '') === ''));
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
