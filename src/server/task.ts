// One request's generation: its parameters, the shared GenerationLoop (sampling, stop/EOS/length, held-back
// stop text) and the sink its text goes to. The scheduler feeds it logits; it never touches a cache.
import { GenerationLoop, type Released } from '../model/generation-loop.js';
import type { TokenLogprob } from '../model/logprobs.js';
import type { SamplerOptions } from '../model/sampler.js';
import type { KvCache } from '../cache/kvcache.js';
import type { Tokenizer } from '../model/tokenizer/index.js';

export interface TaskParams {
  prompt: number[];
  /** Most tokens to generate (already capped by the slot's context). */
  maxTokens: number;
  sampler: SamplerOptions;
  stop: string[];
  /** null: no logprobs; k >= 0: the chosen token's logprob and the k most likely. */
  logprobs: number | null;
  /** Same for the prompt's own tokens (completions' echo): needs a cold prefill with every position's logits. */
  promptLogprobs?: number | null;
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
  /** Logprobs of prompt tokens 1.. (token 0 has none), when asked for. */
  promptLogprobs: TokenLogprob[] | null;
  timings: Timings;
}

/** Where a task's output goes (an HTTP response). */
export interface TaskSink {
  /** New text (possibly '') with the logprobs of the tokens behind it. */
  token(text: string, logprobs: TokenLogprob[]): void;
  done(r: TaskResult): void;
  fail(e: unknown): void;
}

/** The choices of one prompt (n > 1): the leader's prefilled cache, forked for each sibling as it starts. */
export interface ForkGroup {
  leader: Task;
  /** Set when the leader's prefill is done; disposed once every sibling started. */
  base: { cache: KvCache; tokens: number[]; logits: Float32Array } | null;
  /** Siblings not started yet. */
  waiting: number;
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
  readonly submitted = performance.now();
  prefillStart = 0;
  firstTokenAt = 0;
  lastTokenAt = 0;
  private readonly loop: GenerationLoop;
  /** Filled during prefill when params.promptLogprobs is set. */
  promptLogprobs: TokenLogprob[] | null = null;
  /** Choices of one request's prompt: the first prefills, the others fork its cache (scheduler.ts). */
  group: ForkGroup | null = null;

  constructor(
    readonly params: TaskParams,
    private readonly sink: TaskSink,
    tokenizer: Tokenizer,
    eos: readonly number[],
    private readonly wake: () => void,
  ) {
    this.loop = new GenerationLoop({
      prompt: params.prompt,
      maxTokens: params.maxTokens,
      sampler: params.sampler,
      eos: params.ignoreEos ? [] : eos,
      stop: params.stop,
      tokenizer,
      logprobs: params.logprobs,
    });
  }

  /** Tokens sampled so far (EOS excluded). */
  get tokens(): readonly number[] {
    return this.loop.tokens;
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
    const r = this.loop.step(logits, room);
    const now = performance.now();
    if (this.loop.tokens.length > 0 && this.firstTokenAt === 0) this.firstTokenAt = now;
    if (this.loop.reason !== 'eos') this.lastTokenAt = now;
    this.send(r);
    if (this.loop.done) return this.finish(this.loop.reason === 'length' ? 'length' : 'stop', now);
    this.pending = this.loop.last;
    return true;
  }

  /** Ends the task; nothing more is sampled. Text held for stop matching goes out unless a stop string ended it. */
  finish(reason: 'stop' | 'length', now = performance.now()): false {
    if (this.state === 'done') return false;
    if (!this.loop.done) this.send(this.loop.end(reason === 'length' ? 'length' : 'eos'));
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

  /** Released text with the logprobs of the tokens it begins; nothing when there is neither. */
  private send(r: Released): void {
    if (r.text === '' && r.logprobs.length === 0) return;
    this.sink.token(r.text, r.logprobs);
  }

  private result(reason: 'stop' | 'length', now: number): TaskResult {
    const promptN = this.params.prompt.length - this.cachedTokens;
    const promptMs = (this.firstTokenAt || now) - this.prefillStart;
    const predictedMs = this.tokens.length > 0 ? now - this.firstTokenAt : 0;
    return {
      text: this.loop.text,
      tokens: [...this.loop.tokens],
      finishReason: reason,
      promptTokens: this.params.prompt.length,
      cachedTokens: this.cachedTokens,
      slot: this.slot,
      logprobs: this.loop.logprobs,
      promptLogprobs: this.promptLogprobs,
      timings: {
        cache_n: this.cachedTokens,
        prompt_n: promptN,
        prompt_ms: promptMs,
        prompt_per_token_ms: promptN > 0 ? promptMs / promptN : 0,
        prompt_per_second: promptMs > 0 ? (promptN * 1000) / promptMs : 0,
        predicted_n: this.tokens.length,
        predicted_ms: predictedMs,
        predicted_per_token_ms: this.tokens.length > 0 ? predictedMs / this.tokens.length : 0,
        predicted_per_second: predictedMs > 0 ? (this.tokens.length * 1000) / predictedMs : 0,
      },
    };
  }
}
