// Audit checks: one named PASS/FAIL line each; a run or audit passes only if every check passes.

export interface Check {
  readonly name: string;
  readonly pass: boolean;
  readonly detail: string;
}

export class CheckList {
  readonly checks: Check[] = [];
  /** Informational lines (printed as NOTE, never part of the verdict), in order with the checks. */
  private readonly printed: { note: boolean; index: number; text: string }[] = [];
  note(text: string): void {
    this.printed.push({ note: true, index: -1, text });
  }
  add(name: string, pass: boolean, detail = ''): boolean {
    this.printed.push({ note: false, index: this.checks.length, text: '' });
    this.checks.push({ name, pass, detail });
    return pass;
  }
  /** Runs fn; a thrown error is a FAIL whose detail is the message (audits never crash on bad files). */
  try(name: string, fn: () => [pass: boolean, detail: string]): boolean {
    try {
      const [pass, detail] = fn();
      return this.add(name, pass, detail);
    } catch (e) {
      return this.add(name, false, `error: ${(e as Error).message}`);
    }
  }
  /** Appends another list's checks and notes, names prefixed. */
  merge(other: CheckList, prefix = ''): void {
    for (const p of other.printed) {
      if (p.note) this.note(prefix + p.text);
      else {
        const c = other.checks[p.index]!;
        this.add(prefix + c.name, c.pass, c.detail);
      }
    }
  }
  get pass(): boolean {
    return this.checks.length > 0 && this.checks.every((c) => c.pass);
  }
  /** The printed form: one line per check, then the final verdict. */
  lines(): string[] {
    const out = this.printed.map((p) => {
      if (p.note) return `NOTE ${p.text}`;
      const c = this.checks[p.index]!;
      return `${c.pass ? 'PASS' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`;
    });
    out.push(`${this.pass ? 'PASS' : 'FAIL'} audit: ${this.checks.filter((c) => c.pass).length}/${this.checks.length} checks passed`);
    return out;
  }
}

/** Counts items failing `ok`; the detail names the first failure. */
export function countFailures<T>(items: readonly T[], ok: (x: T) => boolean, name: (x: T) => string): [pass: boolean, detail: string] {
  const bad = items.filter((x) => !ok(x));
  if (bad.length === 0) return [true, `${items.length}/${items.length}`];
  return [false, `${items.length - bad.length}/${items.length}; first failure: ${name(bad[0]!)}`];
}

/** Equal, or within `tol` relative (numbers); recursive over arrays and objects. */
export function near(a: unknown, b: unknown, tol: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || Math.abs(a - b) <= tol * Math.max(Math.abs(a), Math.abs(b));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => near(x, b[i], tol));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort(),
      kb = Object.keys(b).sort();
    return near(ka, kb, 0) && ka.every((k) => near((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], tol));
  }
  return a === b;
}
