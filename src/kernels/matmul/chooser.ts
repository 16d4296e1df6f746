// Picks one thread or the pool for a matmul job by its size class, from measured times.
/** Re-time the option not in use once every this many calls of a size class (the machine's load changes). */
const PROBE_EVERY = 32;

/** Recent times per option a size class keeps: their median decides, so one stall does not (a slow wake-up). */
const CHOOSER_SAMPLES = 5;
/** Times of each option a size class has before the medians decide. */
const CHOOSER_MIN_SAMPLES = 3;
/** The pool's time per multiply-add under this fraction of one thread's counts as a clear win (2 threads: ~0.5 on a quiet machine). */
const CLEAR_WIN = 0.7;

/** One size class's recent times per multiply-add on one thread and on the pool. */
interface ClassTimes {
  one: number[];
  many: number[];
  calls: number;
  /** Whether the first (warm-up) time of each kind was dropped. */
  oneWarm: boolean;
  manyWarm: boolean;
}

/**
 * Picks one thread or the pool per size class (log2 of multiply-adds) from measured time per multiply-add:
 * on a machine where other processes hold the cores, a worker waits for a time slice and the pool loses
 * (bench/engine.ts saw +0.6 ms per call under load), so the choice is measured rather than fixed. Each
 * option keeps its last few times and the medians are compared: an average let one stalled call (a worker
 * descheduled for a time slice) send a size class to one thread for hundreds of calls.
 */
export class ThreadChooser {
  private readonly stats = new Map<number, ClassTimes>();
  private entry(macs: number): ClassTimes {
    const b = Math.round(Math.log2(macs));
    let s = this.stats.get(b);
    if (!s) this.stats.set(b, (s = { one: [], many: [], calls: 0, oneWarm: false, manyWarm: false }));
    return s;
  }
  /** Whether the last choose() picked the option that is not the best, to re-time it. */
  probing = false;
  choose(macs: number): boolean {
    const s = this.entry(macs);
    s.calls++;
    this.probing = false;
    // The pool until it has a few times, then one thread every fourth call until it has as many: a choice
    // made on one time each followed whichever call happened to stall.
    if (s.many.length < CHOOSER_MIN_SAMPLES) return true;
    if (s.one.length < CHOOSER_MIN_SAMPLES) return s.calls % 4 !== 0;
    const many = middle(s.many);
    const one = middle(s.one);
    // A probe of one thread costs a call at its speed, so a clear loser is re-timed less often. (Re-timing
    // the pool more often, every 8th call, sent decode to the pool under load and ran 0.6x: one worker
    // descheduled while it holds a unit makes the whole call wait.)
    const every = many < one && one > 1.5 * many ? 4 * PROBE_EVERY : PROBE_EVERY;
    this.probing = s.calls % every === 0;
    return this.probing ? !(many < one) : many < one;
  }
  /**
   * True when the pool's recent median time is well under one thread's (CLEAR_WIN): only then do its jobs
   * hold the workers awake and prefetch, whose cost (a spinning worker) no job time shows. Beside a busy
   * process a spinning worker takes a core's share from this thread's own single-threaded work.
   */
  clearlyFaster(macs: number): boolean {
    return this.poolUnder(macs, CLEAR_WIN);
  }
  /** True when both options have times and the pool's median is the lower (the choice choose() makes when not probing). */
  poolFaster(macs: number): boolean {
    return this.poolUnder(macs, 1);
  }
  /** Both options timed, and the pool's median time under `share` of one thread's. */
  private poolUnder(macs: number, share: number): boolean {
    const s = this.entry(macs);
    return s.many.length >= CHOOSER_MIN_SAMPLES && s.one.length >= CHOOSER_MIN_SAMPLES && middle(s.many) < share * middle(s.one);
  }
  record(macs: number, parallel: boolean, ms: number): void {
    const s = this.entry(macs);
    const times = parallel ? s.many : s.one;
    // The first call of each kind includes warm-up (a pool start, tier-up): the second replaces it.
    if (times.length === 1 && !(parallel ? s.manyWarm : s.oneWarm)) {
      times.pop();
      if (parallel) s.manyWarm = true;
      else s.oneWarm = true;
    }
    times.push(ms / macs);
    if (times.length > CHOOSER_SAMPLES) times.shift();
  }
}

const sorted = new Float64Array(CHOOSER_SAMPLES);
/** The median of at most CHOOSER_SAMPLES numbers (no allocation: it runs on every call). */
function middle(xs: readonly number[]): number {
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i]!;
    let j = i;
    for (; j > 0 && sorted[j - 1]! > v; j--) sorted[j] = sorted[j - 1]!;
    sorted[j] = v;
  }
  return sorted[xs.length >> 1]!;
}
