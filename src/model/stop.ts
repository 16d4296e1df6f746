// Stop strings over streamed text: text that could still turn into a stop string is held back, so a
// client never receives the start of a stop string it should not see.

export class StopMatcher {
  private held = '';
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = Math.max(0, ...stops.map((s) => s.length));
  }

  /** Adds generated text; returns what may be sent now and whether a stop string completed (the text ends before it). */
  push(text: string): { emit: string; stopped: boolean } {
    this.held += text;
    if (this.stops.length === 0) return this.release(this.held.length, false);
    let cut = -1;
    for (const s of this.stops) {
      if (s === '') continue;
      const i = this.held.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      const emit = this.held.slice(0, cut);
      this.held = '';
      return { emit, stopped: true };
    }
    return this.release(this.held.length - this.partialTail(), false);
  }

  /** The end of generation without a stop: whatever was held goes out. */
  flush(): string {
    const t = this.held;
    this.held = '';
    return t;
  }

  /** Length of the longest suffix of held that is a proper prefix of some stop string. */
  private partialTail(): number {
    for (let k = Math.min(this.longest - 1, this.held.length); k > 0; k--) {
      const tail = this.held.slice(this.held.length - k);
      if (this.stops.some((s) => s.length > k && s.startsWith(tail))) return k;
    }
    return 0;
  }

  private release(n: number, stopped: boolean): { emit: string; stopped: boolean } {
    const emit = this.held.slice(0, n);
    this.held = this.held.slice(n);
    return { emit, stopped };
  }
}
