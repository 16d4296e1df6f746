// The control block the caller and the pool workers share (Int32Array over a SharedArrayBuffer): word
// indices, job kinds and the generation-tagged unit counter, in one place for both sides.

export const GEN = 0; // bumped per job; workers wait on it
export const TICKET = 1; // (generation tag << 16) | next unit to take
export const DONE = 2; // units or calls finished
export const QUIT = 3;
export const READY = 4; // workers that finished instantiation
export const JOB_LEN = 5; // bytes of the JSON job
export const ERR = 6; // 1 when a worker's unit or call threw
export const KIND = 7; // JOB_UNITS, JOB_CALLS or JOB_SHARED
// The shared job: export index and job address (set once per pool), workers that take part (per post).
export const SHARED_FN = 8;
export const SHARED_JOB = 9;
export const SHARED_WORKERS = 10;
export const CTL_WORDS = 11;

export const JOB_UNITS = 0;
export const JOB_CALLS = 1;
/** Every worker runs one export on a shared job that hands out its own work (postShared); no DONE report. */
export const JOB_SHARED = 2;
/** Per worker call slot (f64): [export index (-1 = none), argc, args...]. */
export const MAX_CALL_ARGS = 16;
export const CALL_SLOT = 2 + MAX_CALL_ARGS;
/** Units per job the 16-bit counter can hand out. */
export const MAX_UNITS = 0xffff;

const tag = (gen: number) => (gen & 0x7fff) << 16;

/** Arms the unit counter for generation `gen` (before GEN is bumped to it). */
export function armTickets(ctl: Int32Array, gen: number): void {
  Atomics.store(ctl, TICKET, tag(gen));
}

/**
 * Takes the next unit of generation `gen`'s job, or -1 when none are left or a newer job has replaced it:
 * a worker that woke late for an old job can never take (and misread) a unit of the next one.
 */
export function takeUnit(ctl: Int32Array, gen: number, units: number): number {
  for (;;) {
    const t = Atomics.load(ctl, TICKET);
    if ((t & ~0xffff) !== tag(gen)) return -1;
    const u = t & 0xffff;
    if (u >= units) return -1;
    if (Atomics.compareExchange(ctl, TICKET, t, t + 1) === t) return u;
  }
}
