// One generation loop for run, chat, serve and the page: sample from the logits after the last fed token,
// end at EOS, a stop string or the token limit, and release text only once no stop string can still claim
// it (a partial match is held back, never shown). A token's logprob goes out with the first text it
// contributed; tokens whose text a stop string cut off entirely are not returned.
import type { Tokenizer, StreamDecoder } from './tokenizer/index.js';
import { tokenLogprob, type TokenLogprob } from './logprobs.js';
import { Sampler, type SamplerOptions } from './sampler.js';
import { StopMatcher } from './stop.js';

export type StopReason = 'eos' | 'stop' | 'length';

export interface LoopOptions {
  /** The prompt (the repetition penalty reads it). */
  prompt: readonly number[];
  maxTokens: number;
  sampler?: Sampler | SamplerOptions;
  /** Token ids that end generation; [] never stops on EOS. */
  eos: readonly number[];
  /** Stop strings (need a tokenizer); the text ends before the first one that appears. */
  stop?: readonly string[];
  tokenizer?: Tokenizer;
  /** null/undefined: no logprobs; k >= 0: the chosen token's logprob and the k most likely. */
  logprobs?: number | null;
}

/** What a step lets out: text no stop string can claim any more, and the tokens it begins. */
export interface Released {
  text: string;
  ids: number[];
  /** Parallel to ids when logprobs were asked for, else empty. */
  logprobs: TokenLogprob[];
}

interface Held {
  id: number;
  /** Offset in the generated text where this token's text begins. */
  start: number;
  lp: TokenLogprob | undefined;
}

export class GenerationLoop {
  /** Every token sampled (EOS excluded), including those a stop string cut off. */
  readonly tokens: number[] = [];
  /** Text released so far. */
  text = '';
  /** Ids of the released tokens (tokens minus what the stop string cut off), and their logprobs. */
  readonly ids: number[] = [];
  readonly logprobs: TokenLogprob[] = [];
  /** Set once the loop ended; no more steps. */
  reason: StopReason | null = null;
  private readonly sampler: Sampler;
  private readonly eos: Set<number>;
  private readonly history: number[];
  private readonly stop: StopMatcher;
  private readonly decoder: StreamDecoder | undefined;
  private readonly held: Held[] = [];
  /** Length of all text decoded so far (released + held by the stop matcher). */
  private decoded = 0;

  constructor(private readonly o: LoopOptions) {
    if (!Number.isInteger(o.maxTokens) || o.maxTokens < 0) throw new RangeError(`maxTokens must be a non-negative integer, got ${o.maxTokens}`);
    this.sampler = o.sampler instanceof Sampler ? o.sampler : new Sampler(o.sampler);
    this.eos = new Set(o.eos);
    this.history = [...o.prompt];
    this.stop = new StopMatcher(o.stop ?? []);
    this.decoder = o.tokenizer?.stream();
    if (o.maxTokens === 0) this.reason = 'length';
  }

  get done(): boolean {
    return this.reason !== null;
  }

  /** The token to feed next (the last sampled), valid while !done. */
  get last(): number {
    return this.tokens[this.tokens.length - 1]!;
  }

  /** Samples one token from `logits`; `room` = positions left after it would be fed (0 ends with 'length'). */
  step(logits: Float32Array, room = Infinity): Released {
    if (this.done) return { text: '', ids: [], logprobs: [] };
    const id = this.sampler.sample(logits, this.history, this.tokens.length);
    if (this.eos.has(id)) return this.end('eos');
    this.tokens.push(id);
    this.history.push(id);
    const lp = this.o.logprobs === null || this.o.logprobs === undefined ? undefined : tokenLogprob(logits, id, this.o.logprobs);
    this.held.push({ id, start: this.decoded, lp });
    const piece = this.decoder ? this.decoder.push(id) : '';
    this.decoded += piece.length;
    const { emit, stopped } = this.stop.push(piece);
    if (stopped) {
      this.reason = 'stop';
      return this.release(emit, this.text.length + emit.length);
    }
    // Without a tokenizer there is no text to hold back: every token goes out at once.
    const now = this.release(emit, this.decoder ? this.text.length + emit.length : Infinity);
    if (this.tokens.length < this.o.maxTokens && room > 0) return now;
    const rest = this.end('length');
    return { text: now.text + rest.text, ids: [...now.ids, ...rest.ids], logprobs: [...now.logprobs, ...rest.logprobs] };
  }

  /** Ends the loop (EOS, length, or from outside: a drain); what was held goes out unless a stop string ended it. */
  end(reason: StopReason): Released {
    if (this.done) return { text: '', ids: [], logprobs: [] };
    this.reason = reason;
    // A partial UTF-8 character comes out as U+FFFD, still subject to the stop strings.
    const tail = this.decoder ? this.stop.push(this.decoder.flush()) : { emit: '', stopped: false };
    if (tail.stopped) {
      this.reason = 'stop';
      return this.release(tail.emit, this.text.length + tail.emit.length);
    }
    return this.release(tail.emit + this.stop.flush(), Infinity);
  }

  /** Appends `text` to the released text and lets out the held tokens whose text begins before `upTo`. */
  private release(text: string, upTo: number): Released {
    this.text += text;
    const out: Released = { text, ids: [], logprobs: [] };
    let n = 0;
    while (n < this.held.length && this.held[n]!.start < upTo) n++;
    for (const h of this.held.splice(0, n)) {
      out.ids.push(h.id);
      this.ids.push(h.id);
      if (h.lp) {
        out.logprobs.push(h.lp);
        this.logprobs.push(h.lp);
      }
    }
    // A stop string ended the loop: what is still held was cut off.
    if (this.reason === 'stop') this.held.length = 0;
    return out;
  }
}
