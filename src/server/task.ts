// One request's generation: its parameters, the tokens it sampled so far, stop/EOS/length handling, and the
// sink its text goes to. The scheduler feeds it logits; it never touches a cache.
import { Sampler, type SamplerOptions } from '../model/sampler.js';
import type { StreamDecoder, Tokenizer } from '../model/tokenizer/index.js';
import { tokenLogprob, type TokenLogprob } from './logprobs.js';
import { StopMatcher } from './stop.js';

export interface TaskParams {
  prompt: number[];
  /** Most tokens to generate (already capped by the slot's context). */
  maxTokens: number;
  sampler: SamplerOptions;
  stop: string[];
  /** null: no logprobs; k >= 0: the chosen token's logprob and the k most likely. */
  logprobs: number | null;
  /** Prefix-cache root: model digest, cache policy and salt (see prefix-key.ts). Slots reuse KV only under the same key. */
  key: string;
  /** A slot asked for by id (llama-server's id_slot); undefined = any. */
  slot?: number;
  ignoreEos?: boolean;
}

export interface Timings {
  cache_n: number;
  prompt_n: number;
  prompt_ms: number;
  prompt_per_token_ms: number;
  prompt_per_second: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_token_ms: number;
  predicted_per_second: number;
}

export interface TaskResult {
  text: string;
  tokens: number[];
  finishReason: 'stop' | 'length';
  promptTokens: number;
  cachedTokens: number;
  slot: number;
  logprobs: TokenLogprob[];
  timings: Timings;
}

/** Where a task's output goes (an HTTP response). */
export interface TaskSink {
  /** New text (possibly '') with the logprobs of the tokens behind it. */
  token(text: string, logprobs: TokenLogprob[]): void;
  done(r: TaskResult): void;
  fail(e: unknown): void;
}

let nextId = 1;

export class Task {
  readonly id = nextId++;
  state: 'queued' | 'prefill' | 'decode' | 'done' = 'queued';
  /** Set by a client disconnect: the scheduler frees the slot before its next step. */
  cancelled = false;
  /** False while a second-tier prefix lookup is in flight: not yet schedulable. */
  ready = true;
  /** Set while the client's socket is full (backpressure): the slot sits out decode steps. */
  paused = false;
  /** Prompt tokens served from cache (slot reuse or prefix cache). */
  cachedTokens = 0;
  /** The slot serving it (-1 while queued). */
  slot = -1;
  /** The sampled token not yet fed to the model (decode state). */
  pending = -1;
  readonly tokens: number[] = [];
  readonly submitted = performance.now();
  prefillStart = 0;
  firstTokenAt = 0;
  lastTokenAt = 0;
  private readonly sampler: Sampler;
  private readonly stop: StopMatcher;
  private readonly decoder: StreamDecoder;
  private readonly eos: Set<number>;
  private readonly history: number[];
  private readonly logprobs: TokenLogprob[] = [];
  /** Logprobs of tokens whose text was not sent yet. */
  private unsent: TokenLogprob[] = [];
  private text = '';

  constructor(readonly params: TaskParams, private readonly sink: TaskSink, tokenizer: Tokenizer, eos: readonly number[], private readonly wake: () => void) {
    this.sampler = new Sampler(params.sampler);
    this.stop = new StopMatcher(params.stop);
    this.decoder = tokenizer.stream();
    this.eos = new Set(params.ignoreEos ? [] : eos);
    this.history = [...params.prompt];
  }

  cancel(): void {
    this.cancelled = true;
    this.wake();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.wake();
  }

  /**
   * Samples from the logits after the last fed token; returns true while the task goes on (its new token is
   * in `pending`). `room` = positions left in the cache after this token would be fed.
   */
  accept(logits: Float32Array, room: number): boolean {
    const id = this.sampler.sample(logits, this.history);
    const now = performance.now();
    if (this.eos.has(id)) return this.finish('stop', now);
    this.tokens.push(id);
    this.history.push(id);
    if (this.params.logprobs !== null) {
      const lp = tokenLogprob(logits, id, this.params.logprobs);
      this.logprobs.push(lp);
      this.unsent.push(lp);
    }
    if (this.firstTokenAt === 0) this.firstTokenAt = now;
    this.lastTokenAt = now;
    const { emit, stopped } = this.stop.push(this.decoder.push(id));
    this.send(emit);
    if (stopped) return this.finish('stop', now, true);
    if (this.tokens.length >= this.params.maxTokens || room <= 0) return this.finish('length', now);
    this.pending = id;
    return true;
  }

  /** Ends the task; nothing more is sampled. Text held for stop matching goes out unless a stop string ended it. */
  finish(reason: 'stop' | 'length', now = performance.now(), byStopString = false): false {
    if (this.state === 'done') return false;
    if (!byStopString) {
      // A partial UTF-8 character comes out as U+FFFD, still subject to the stop strings.
      const tail = this.stop.push(this.decoder.flush());
      this.send(tail.emit + (tail.stopped ? '' : this.stop.flush()));
    }
    this.state = 'done';
    this.pending = -1;
    this.sink.done(this.result(reason, now));
    return false;
  }

  fail(e: unknown): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.sink.fail(e);
  }

  private send(text: string): void {
    if (text === '' && this.unsent.length === 0) return;
    this.text += text;
    const lps = this.unsent;
    this.unsent = [];
    this.sink.token(text, lps);
  }

  private result(reason: 'stop' | 'length', now: number): TaskResult {
    const promptN = this.params.prompt.length - this.cachedTokens;
    const promptMs = (this.firstTokenAt || now) - this.prefillStart;
    const predictedMs = this.tokens.length > 0 ? now - this.firstTokenAt : 0;
    return {
      text: this.text, tokens: [...this.tokens], finishReason: reason, promptTokens: this.params.prompt.length, cachedTokens: this.cachedTokens, slot: this.slot, logprobs: this.logprobs,
      timings: {
        cache_n: this.cachedTokens, prompt_n: promptN, prompt_ms: promptMs,
        prompt_per_token_ms: promptN > 0 ? promptMs / promptN : 0, prompt_per_second: promptMs > 0 ? (promptN * 1000) / promptMs : 0,
        predicted_n: this.tokens.length, predicted_ms: predictedMs,
        predicted_per_token_ms: this.tokens.length > 0 ? predictedMs / this.tokens.length : 0,
        predicted_per_second: predictedMs > 0 ? (this.tokens.length * 1000) / predictedMs : 0,
      },
    };
  }
}
