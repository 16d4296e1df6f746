// The scheduler: a queue of tasks, -np slots, and a loop that runs one step at a time between I/O events.
// A step feeds every decoding slot's next token in one batched forward pass (continuous batching), then one
// prefill chunk of one prefilling slot, so a new prompt never stalls running streams for more than a chunk.
// A failing forward pass is retried slot by slot, so an exception fails only the request that caused it.
// A prompt resumes at the deepest point its slot's own cache or a prefix-cache entry is resumable at
// (resume-point.ts), and its prefill stops at a few marks to leave resume points for later prompts.
import type { AttentionPrecision, KvCache } from '../cache/kvcache.js';
import type { CachePolicy } from '../cache/policy.js';
import { forwardBatch, type BatchSeq, type ForwardOptions } from '../model/forward.js';
import { tokenLogprob } from '../model/logprobs.js';
import type { Model } from '../model/model.js';
import { commonPrefix, reusable, rewindTo } from './cache-reuse.js';
import { HttpError } from './http-error.js';
import type { ServerMetrics } from './metrics.js';
import type { PrefixCache } from './prefix-cache.js';
import type { RemoteFetch, RemotePrefixTier } from './remote-prefix.js';
import { Slot } from './slot.js';
import { Task, type ForkGroup, type TaskParams, type TaskSink } from './task.js';

/** Runs one batched step: each sequence's last-token logits. Tests wrap it to inject faults. */
export type StepRunner = (model: Model, seqs: readonly BatchSeq[], opts?: ForwardOptions) => Float32Array[];

export interface SchedulerOptions {
  parallel: number;
  /** Positions per slot (-c). */
  ctx: number;
  policy: CachePolicy;
  attention: AttentionPrecision;
  chunkTokens: number;
  /** Tasks waiting for a slot beyond which submit() refuses with 429. */
  queueMax: number;
  /** Decode all active slots in one forward pass (false: one pass per slot, for comparison). */
  batching: boolean;
  /** Prompt tokens per prefill step (at most: steps also end at resume marks). */
  prefillChunk: number;
  /** Also leave a resume point every this many chunks of a prompt (0: only the prompt end and where prompts diverged). */
  resumeEvery?: number;
  runner?: StepRunner;
}

export class Scheduler {
  readonly slots: Slot[];
  private readonly queue: Task[] = [];
  private scheduled = false;
  private draining = false;
  private prefillTurn = 0;
  private clock = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly runner: StepRunner;
  /** What the remote tier found for queued tasks (its entry pinned) until the task starts (or ends unstarted). */
  private readonly held = new Map<Task, RemoteFetch>();
  /** Set once the engine wires a remote tier. */
  remote: RemotePrefixTier | null = null;

  constructor(
    readonly model: Model,
    readonly o: SchedulerOptions,
    readonly prefix: PrefixCache,
    readonly metrics: ServerMetrics,
  ) {
    this.slots = Array.from({ length: o.parallel }, (_, i) => new Slot(i, this.newCache()));
    this.runner = o.runner ?? ((m, seqs, opts) => forwardBatch(m, seqs, opts));
  }

  newCache(): KvCache {
    return this.model.createCache({ policy: this.o.policy, capacity: this.o.ctx, chunkTokens: this.o.chunkTokens, attention: this.o.attention });
  }

  get processing(): number {
    return this.slots.filter((s) => !s.idle).length;
  }

  get deferred(): number {
    return this.queue.length;
  }

  /** Queues a task; 503 while draining, 429 when every slot is busy and the queue is full. */
  submit(params: TaskParams, sink: TaskSink): Task {
    if (this.draining) throw new HttpError(503, 'unavailable_error', 'the server is shutting down', null, {}, 5);
    if (params.slot !== undefined && (params.slot < 0 || params.slot >= this.slots.length))
      throw new HttpError(400, 'invalid_request_error', `id_slot ${params.slot} outside [0, ${this.slots.length})`, 'id_slot');
    if (this.queue.length >= this.o.queueMax && !this.slots.some((s) => s.idle)) {
      throw new HttpError(429, 'rate_limit_error', `all ${this.slots.length} slots are busy and ${this.queue.length} requests are waiting`, null, {}, 1);
    }
    const task = new Task(params, sink, this.model.tokenizer!, this.model.eos, () => this.wake());
    this.queue.push(task);
    if (this.remote) {
      // Pull a deeper prefix from the remote tier before the task may take a slot.
      task.ready = false;
      this.remote
        .fetchEntry(this.prefix, () => this.newCache(), params.key, params.prompt)
        .then((f) => {
          if (task.state === 'queued' && !task.cancelled) this.held.set(task, f);
          else if (f.entry) this.prefix.unpin(f.entry);
        })
        .catch(() => {})
        .finally(() => {
          task.ready = true;
          this.wake();
        });
    }
    this.wake();
    return task;
  }

  /**
   * Queues the n choices of one prompt: the first prefills, the others start from a fork of its cache and
   * its last logits (each samples with its own seed). All are refused together.
   */
  submitGroup(choices: readonly TaskParams[], sinks: readonly TaskSink[]): Task[] {
    const leader = this.submit(choices[0]!, sinks[0]!);
    if (choices.length === 1) return [leader];
    if (this.queue.length + choices.length - 1 > this.o.queueMax + this.slots.length) {
      leader.cancel();
      throw new HttpError(429, 'rate_limit_error', `${choices.length} choices do not fit the queue (${this.o.queueMax} waiting at most)`, null, {}, 1);
    }
    const group: ForkGroup = { leader, base: null, waiting: choices.length - 1 };
    leader.group = group;
    const tasks = [leader];
    for (let j = 1; j < choices.length; j++) {
      const t = new Task(choices[j]!, sinks[j]!, this.model.tokenizer!, this.model.eos, () => this.wake());
      t.group = group;
      t.ready = false;
      this.queue.push(t);
      tasks.push(t);
    }
    return tasks;
  }

  /** Unpins the entry fetched for a task (it started, or ended without starting). */
  private unhold(task: Task): void {
    const f = this.held.get(task);
    if (!f) return;
    this.held.delete(task);
    if (f.entry) this.prefix.unpin(f.entry);
  }

  /** Refuses new tasks from now on; resolves when every queued and running task has ended. */
  drain(): Promise<void> {
    this.draining = true;
    return this.whenIdle();
  }

  whenIdle(): Promise<void> {
    if (this.queue.length === 0 && this.processing === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Ends every task now (drain timeout): clients get what they have, finish_reason 'length'. */
  stopAll(): void {
    for (const t of this.queue.splice(0)) {
      this.unhold(t);
      this.leaveGroup(t);
      t.finish('length');
    }
    for (const s of this.slots) if (s.task) this.release(s, () => s.task!.finish('length'));
    this.checkIdle();
  }

  private wake(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate: sockets (new requests, disconnects, drains) are served between steps.
    setImmediate(() => {
      this.scheduled = false;
      const more = this.step();
      if (more) this.wake();
      else this.checkIdle();
    });
  }

  private checkIdle(): void {
    if (this.queue.length > 0 || this.processing > 0) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** One scheduling step; true while there is runnable work. */
  private step(): boolean {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const t = this.queue[i]!;
      if (!t.cancelled) continue;
      this.unhold(t);
      this.leaveGroup(t);
      this.queue.splice(i, 1);
    }
    for (const s of this.slots) if (s.task?.cancelled) this.release(s);
    this.admit();
    this.decodeStep();
    this.prefillStep();
    const runnable = this.slots.some((s) => s.task && (s.task.state === 'prefill' || (s.task.state === 'decode' && !s.task.paused)));
    return runnable || this.queue.some((t) => t.ready && this.slotFor(t) !== null);
  }

  /** Moves queued tasks into idle slots, reusing the longest cached prefix they are allowed to read. */
  private admit(): void {
    for (let i = 0; i < this.queue.length; ) {
      const task = this.queue[i]!;
      const slot = task.ready ? this.slotFor(task) : null;
      if (!slot) {
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      this.start(slot, task);
    }
  }

  /** The idle slot a task should take (the longest shared prefix, then the least recently used), or null. */
  private slotFor(task: Task): Slot | null {
    if (task.params.slot !== undefined) {
      const s = this.slots[task.params.slot]!;
      return s.idle ? s : null;
    }
    let best: Slot | null = null;
    let bestKeep = -1;
    for (const s of this.slots) {
      if (!s.idle) continue;
      // The shared prefix as a preference only (start() finds where the cache is resumable): this runs every step.
      const keep = s.key === task.params.key ? commonPrefix(s.tokens, task.params.prompt, task.params.prompt.length - 1) : 0;
      if (keep > bestKeep || (keep === bestKeep && s.used < best!.used)) {
        best = s;
        bestKeep = keep;
      }
    }
    return best;
  }

  private ownResume(s: Slot, prompt: readonly number[]): { matched: number; keep: number } {
    return reusable(s.cache, s.tokens, prompt, s.decodeStart, this.prefix.resumeAt);
  }

  private start(slot: Slot, task: Task): void {
    const g = task.group;
    if (g && g.leader !== task && g.base) return this.startSibling(slot, task, g);
    const { prompt, key } = task.params;
    // The prompt's own logprobs need every position computed: no cached prefix.
    const cold = task.params.promptLogprobs !== null && task.params.promptLogprobs !== undefined;
    const own = slot.key === key && !cold ? this.ownResume(slot, prompt) : { matched: 0, keep: 0 };
    const { hit, matched } = cold ? { hit: null, matched: 0 } : this.prefix.lookup(key, this.prefix.hashesFor(key, prompt), prompt);
    const remoteMatched = cold ? 0 : (this.held.get(task)?.matched ?? 0);
    let keep: number;
    if (hit && hit.keep > own.keep) {
      // Restore from the prefix cache: a fork shares the entry's packed chunks (copy-on-write).
      keep = hit.keep;
      const c = hit.entry.cache.fork();
      if (c.length > keep) c.rewind(keep);
      c.dropDecodeStart();
      slot.replaceCache(c, prompt.slice(0, keep), key);
      this.prefix.pin(hit.entry);
      slot.entry = hit.entry;
      if (hit.entry.remote) this.metrics.remoteHits.inc(keep);
    } else if (own.keep > 0) {
      keep = rewindTo(slot.cache, own.keep);
      slot.tokens.length = keep;
    } else {
      // A cold start (another key's KV is never read; an unresumable cache is no use): empty the slot first.
      slot.erase();
      keep = 0;
    }
    this.unhold(task);
    slot.key = key;
    slot.marks = this.resumeMarks(prompt.length, keep, Math.max(own.matched, matched, remoteMatched));
    slot.used = ++this.clock;
    slot.task = task;
    slot.remaining = prompt.slice(keep);
    task.slot = slot.id;
    task.cachedTokens = keep;
    task.state = 'prefill';
    task.prefillStart = performance.now();
    this.metrics.prefixQueries.inc(prompt.length);
    if (keep > 0) this.metrics.prefixHits.inc(keep);
    else this.metrics.prefixMisses.inc();
  }

  /**
   * Where a prefill of `n` prompt tokens resuming at `keep` stops to leave resume points (ascending, > keep):
   * the prompt end (a repeat resumes at n - 1), the deepest chunk boundary a match with another prompt
   * reached (`matched`: the next prompt sharing that prefix resumes there), every resumeEvery-th chunk
   * boundary, and with a remote tier the deepest chunk boundary before the prompt end (where another
   * instance importing this prompt's chain resumes).
   */
  private resumeMarks(n: number, keep: number, matched: number): number[] {
    if (!this.prefix.enabled && !this.remote) return [];
    const C = this.o.chunkTokens;
    const down = (p: number) => Math.floor(p / C) * C;
    const marks = new Set([n, down(Math.min(matched, n - 1))]);
    if (this.remote) marks.add(down(n - 1));
    const every = (this.o.resumeEvery ?? 0) * C;
    if (every > 0) for (let b = every; b < n; b += every) marks.add(b);
    return [...marks].filter((b) => b > keep && b >= C).sort((x, y) => x - y);
  }

  /** A choice that ends without starting: its group's base is freed once no choice waits for it. */
  private leaveGroup(t: Task): void {
    const g = t.group;
    if (!g || g.leader === t) return;
    t.group = null;
    if (--g.waiting > 0 || !g.base) return;
    g.base.cache.dispose();
    g.base = null;
  }

  /** A choice of a forked group: the leader's prefilled cache, forked (copy-on-write), and its last logits. */
  private startSibling(slot: Slot, task: Task, g: ForkGroup): void {
    const b = g.base!;
    slot.replaceCache(b.cache.fork(), [...b.tokens], task.params.key);
    slot.decodeStart = b.tokens.length;
    slot.key = task.params.key;
    slot.used = ++this.clock;
    slot.task = task;
    slot.remaining = [];
    task.slot = slot.id;
    task.cachedTokens = 0;
    task.state = 'decode';
    task.prefillStart = performance.now();
    task.promptLogprobs = g.leader.promptLogprobs;
    if (--g.waiting === 0) {
      b.cache.dispose();
      g.base = null;
    }
    this.release(slot, () => task.accept(b.logits, slot.cache.capacity - slot.cache.length), false);
  }

  /** Every decoding slot's pending token through one forward pass (or one pass each without batching). */
  private decodeStep(): void {
    const active = this.slots.filter((s) => s.task?.state === 'decode' && !s.task.paused);
    if (active.length === 0) return;
    const seqs = active.map((s) => ({ tokens: [s.task!.pending], cache: s.cache }));
    const logits = this.o.batching ? this.tryBatch(active, seqs) : active.map((s, i) => this.runOne(s, seqs[i]!));
    this.metrics.decodeCalls.inc(this.o.batching ? 1 : active.length);
    this.metrics.busyPerDecode.set(active.length);
    const done = performance.now();
    active.forEach((s, i) => {
      const l = logits[i];
      if (!l) return;
      const task = s.task!;
      s.tokens.push(task.pending);
      this.metrics.interToken.observe((done - task.lastTokenAt) / 1000);
      this.release(s, () => task.accept(l, s.cache.capacity - s.cache.length), false);
    });
  }

  /** The batched pass; when it throws, each slot alone, so only the failing one fails. */
  private tryBatch(active: Slot[], seqs: BatchSeq[]): (Float32Array | null)[] {
    try {
      return this.runner(this.model, seqs);
    } catch {
      return active.map((s, i) => this.runOne(s, seqs[i]!));
    }
  }

  private runOne(s: Slot, seq: BatchSeq, opts?: ForwardOptions): Float32Array | null {
    try {
      return this.runner(this.model, [seq], opts)[0]!;
    } catch (e) {
      this.fail(s, e);
      return null;
    }
  }

  /** One chunk of one prefilling slot's prompt (slots take turns). */
  private prefillStep(): void {
    const waiting = this.slots.filter((s) => s.task?.state === 'prefill');
    if (waiting.length === 0) return;
    const s = waiting[this.prefillTurn++ % waiting.length]!;
    const task = s.task!;
    const at = s.cache.length;
    // Results do not depend on where batches end (the cache is batch-invariant): stop at the next mark.
    const mark = s.marks.find((b) => b > at) ?? Infinity;
    const chunk = s.remaining.slice(0, Math.min(this.o.prefillChunk, mark - at));
    const t0 = performance.now();
    const k = task.params.promptLogprobs;
    const scoring = k !== null && k !== undefined;
    let logits = this.runOne(s, { tokens: chunk, cache: s.cache }, scoring ? { allLogits: true } : undefined);
    if (!logits) return;
    if (scoring) logits = this.scorePrompt(task, at, logits, k);
    this.metrics.promptTokens.inc(chunk.length);
    this.metrics.promptSeconds.inc((performance.now() - t0) / 1000);
    this.metrics.decodeCalls.inc();
    s.tokens.push(...chunk);
    s.remaining = s.remaining.slice(chunk.length);
    if (s.cache.length === mark) this.leaveResumePoint(s, s.remaining.length > 0);
    if (s.remaining.length > 0) return;
    // The prompt is in: decode anchors (seed 002) start at the first generated position.
    s.cache.beginDecode();
    s.decodeStart = s.cache.length;
    task.state = 'decode';
    const g = task.group;
    if (g && g.leader === task && g.waiting > 0) {
      g.base = { cache: s.cache.fork(), tokens: [...s.tokens], logits: logits.slice() };
      for (const t of this.queue) if (t.group === g) t.ready = true;
    }
    if (task.params.maxTokens === 0) this.release(s, () => task.finish('length'));
    else {
      this.release(
        s,
        () => {
          const going = task.accept(logits, s.cache.capacity - s.cache.length);
          if (task.firstTokenAt > 0) this.metrics.ttft.observe((task.firstTokenAt - task.submitted) / 1000);
          return going;
        },
        false,
      );
    }
  }

  /**
   * A frozen snapshot of the slot's cache into the prefix cache (it shares the bulk chunks: only its exact
   * rows are new), and inside the prompt on a chunk boundary its chain and resume rows to the remote tier
   * (copied now, written behind).
   */
  private leaveResumePoint(s: Slot, insidePrompt: boolean): void {
    const n = s.cache.length;
    if (!s.key) return;
    this.prefix.insert(s.key, s.tokens, n, s.cache);
    if (this.remote && insidePrompt && n % this.o.chunkTokens === 0) this.remote.offerPrefill(s.key, s.tokens, s.cache);
  }

  /**
   * Logprobs of the prompt tokens after position `at` from a chunk's every-position logits [n, vocab]
   * (row i predicts position at + i + 1); returns the last row (the logits to sample from).
   */
  private scorePrompt(task: Task, at: number, all: Float32Array, k: number): Float32Array {
    const vocab = this.model.nVocab;
    const rows = all.length / vocab;
    const prompt = task.params.prompt;
    task.promptLogprobs ??= [];
    for (let i = 0; i < rows; i++) {
      const next = prompt[at + i + 1];
      if (next !== undefined) task.promptLogprobs.push(tokenLogprob(all.subarray(i * vocab, (i + 1) * vocab), next, k));
    }
    return all.slice((rows - 1) * vocab);
  }

  /**
   * Runs `step` for the slot's task (sampling, sending); frees the slot when the task has ended (or the step
   * threw: that task fails). `always` frees it regardless (cancel, stop).
   */
  private release(s: Slot, step?: () => unknown, always = true): void {
    const task = s.task;
    if (!task) return;
    try {
      step?.();
    } catch (e) {
      task.fail(e);
    }
    if (!always && task.state !== 'done' && !task.cancelled) return;
    task.state = 'done';
    s.task = null;
    this.metrics.predictedTokens.inc(task.tokens.length);
    if (task.tokens.length > 1) this.metrics.predictedSeconds.inc((task.lastTokenAt - task.firstTokenAt) / 1000);
    s.remaining = [];
    if (s.entry) {
      this.prefix.unpin(s.entry);
      s.entry = null;
    }
    s.marks = [];
    // The finished slot's cache as an entry (a conversation continued on another slot resumes at its end).
    // With decode anchors a new prompt may not read past the last prompt: its prompt-end snapshot serves it.
    if (s.key && !(this.o.policy.anchors && s.decodeStart !== undefined)) this.prefix.insert(s.key, s.tokens, s.tokens.length, s.cache);
    this.wake();
  }

  private fail(s: Slot, e: unknown): void {
    const g = s.task?.group;
    // Choices waiting for a leader that failed before its prefill ended fail with it.
    if (g && g.leader === s.task && !g.base) {
      for (const t of this.queue) {
        if (t.group !== g) continue;
        t.fail(e);
        t.cancelled = true;
      }
    }
    s.task?.fail(e);
    // The forward pass rewound the cache to before the failed call: tokens stays in step with it.
    s.tokens.length = s.cache.length;
    this.release(s);
  }

  /** Frees every slot's cache (server shutdown). */
  dispose(): void {
    for (const s of this.slots) s.cache.dispose();
    this.prefix.clear();
  }
}
