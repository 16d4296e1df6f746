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
export const ERR_LEN = 8; // bytes of the first failure's text in the error buffer
// The shared job: export index and job address (set once per pool), workers that take part (per post).
export const SHARED_FN = 9;
export const SHARED_JOB = 10;
export const SHARED_WORKERS = 11;
// The memory space (spaces.ts) a job's addresses refer to.
export const SPACE = 12;
// Workers asleep on GEN (Atomics.wait): a post notifies only when one is, a notify costs the poster a few us
// to tens of us (a futex wake; on a busy 2-vCPU machine the woken thread may preempt the poster).
export const SLEEPING = 13;
// 1 while a caller holds the workers awake (holdWorkers): they spin between jobs instead of sleeping.
export const HOLD = 14;
export const CTL_WORDS = 15;
/** Bytes of the error buffer: the first failing worker's exception, as text (the caller's error cause). */
export const ERR_BYTES = 2048;

/** Records the first failure of a job (later ones only set ERR): its name and message, for the caller. */
export function recordError(ctl: Int32Array, errText: Uint8Array, e: unknown): void {
  if (Atomics.compareExchange(ctl, ERR, 0, 1) !== 0) return;
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  const bytes = new TextEncoder().encode(text).subarray(0, ERR_BYTES);
  errText.set(bytes);
  Atomics.store(ctl, ERR_LEN, bytes.length);
}

/** The failure recordError kept, as an Error to pass as a cause (null when no worker failed). */
export function recordedError(ctl: Int32Array, errText: Uint8Array): Error | null {
  if (!Atomics.load(ctl, ERR)) return null;
  return new Error(new TextDecoder().decode(errText.slice(0, Atomics.load(ctl, ERR_LEN))));
}

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

/**
 * Announces a new job (GEN already bumped): notifies GEN only when a worker sleeps on it. Sequentially
 * consistent atomics make this safe: a worker counts itself in SLEEPING before Atomics.wait compares GEN, so
 * either the poster sees the count and notifies, or the worker sees the new GEN and does not sleep.
 */
export function wakeWorkers(ctl: Int32Array): boolean {
  if (Atomics.load(ctl, SLEEPING) === 0) return false;
  Atomics.notify(ctl, GEN);
  return true;
}

/** A worker's sleep on GEN while it still equals `seen`, counted in SLEEPING (see wakeWorkers). */
export function sleepOnGen(ctl: Int32Array, seen: number): void {
  Atomics.add(ctl, SLEEPING, 1);
  Atomics.wait(ctl, GEN, seen);
  Atomics.sub(ctl, SLEEPING, 1);
}
