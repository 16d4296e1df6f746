// `kvpack chat`: an interactive loop over the model's chat template. The KV cache lives across turns: each
// turn re-renders the whole conversation, keeps the cached prefix it shares, and feeds only the rest.
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { ArgumentError, KvpackError } from '../errors.js';
import { defaultCapacity } from '../cache/defaults.js';
import type { KvCache } from '../cache/kvcache.js';
import { chatPromptTokens, renderChat, type ChatMessage } from '../model/chat.js';
import { generate, rewindForReuse, type GenerateResult } from '../model/generate.js';
import { loadModel, type Model } from '../model/model.js';
import { Sampler, type SamplerOptions } from '../model/sampler.js';
import type { Tokenizer } from '../model/tokenizer/index.js';
import { intArg } from './args.js';
import { addCacheFlags, attentionFromFlags, policyFromFlags, type CacheFlags } from './cache-flags.js';
import { addThreadsFlag, applyThreads, type ThreadsFlag } from './threads-flag.js';
import { addSamplingFlags, samplerFromFlags, type SamplingFlags } from './sampling-flags.js';

/** llama.cpp's default context when -c is not given (capped by the training context). */

export interface ChatSessionOptions {
  system?: string;
  /** Most tokens per reply. */
  maxTokens: number;
  sampler?: SamplerOptions;
  /** Stop strings: a reply ends before the first one (held back while it could still match). */
  stop?: readonly string[];
}

/** What the last turn did with the cache: positions kept from before, and tokens fed now. */
export interface TurnStats {
  reused: number;
  fed: number;
  /** The shared prefix could not be kept (sliding-window layers had dropped what it needs): all was fed again. */
  refilled: boolean;
  /** The reply stopped because the context was full (not at EOS or the token limit). */
  contextFull: boolean;
}

/** A conversation over one model and one KV cache. */
export class ChatSession {
  readonly tokenizer: Tokenizer;
  /** Set when the file has no chat template and ChatML stands in. */
  readonly notice: string | undefined;
  private messages: ChatMessage[] = [];
  /** Token ids held by the cache, in position order. */
  private cached: number[] = [];
  private readonly sampler: Sampler;
  lastTurn: TurnStats = { reused: 0, fed: 0, refilled: false, contextFull: false };

  constructor(
    private readonly model: Model,
    private readonly cache: KvCache,
    private readonly o: ChatSessionOptions,
  ) {
    if (!model.tokenizer) throw new ArgumentError(`chat needs a model with a tokenizer: ${model.tokenizerProblem ?? 'none found'}`);
    this.tokenizer = model.tokenizer;
    this.notice = renderChat(this.tokenizer.chatTemplate, []).notice;
    // One sampler for the whole conversation, so a seeded chat replays the same.
    this.sampler = new Sampler(o.sampler);
    this.reset();
  }

  /** Forgets the conversation (keeps the system prompt) and empties the cache. */
  reset(): void {
    this.messages = this.o.system ? [{ role: 'system', content: this.o.system }] : [];
    this.cache.clear();
    this.cached = [];
  }

  /** Positions the conversation may use. */
  get capacity(): number {
    return this.cache.capacity;
  }

  get history(): readonly ChatMessage[] {
    return this.messages;
  }

  /** The conversation as prompt tokens, ending with the assistant header. */
  promptTokens(messages: readonly ChatMessage[]): number[] {
    return chatPromptTokens(this.tokenizer, messages);
  }

  /** Adds the user's message, generates the reply (streamed through onText) and records it. */
  reply(user: string, onText: (text: string) => void): GenerateResult {
    const messages = [...this.messages, { role: 'user', content: user }];
    const prompt = this.promptTokens(messages);
    const C = this.cache.capacity;
    if (prompt.length > C) throw new ArgumentError(`the conversation needs ${prompt.length} positions, the context holds ${C}; /reset to start over`);
    // The reply may use the context left: n tokens take n - 1 positions after the prompt (the last is not fed).
    const maxTokens = Math.min(this.o.maxTokens, C - prompt.length + 1);
    // Keep the longest cached prefix the new rendering shares; at least one token is fed for fresh logits.
    let shared = 0;
    while (shared < this.cached.length && shared < prompt.length - 1 && this.cached[shared] === prompt[shared]) shared++;
    const keep = rewindForReuse(this.cache, shared);
    this.cached = prompt.slice(0, keep);
    let r: GenerateResult;
    try {
      r = generate(this.model, this.cache, prompt.slice(keep), { maxTokens, sampler: this.sampler, stop: this.o.stop, onText: (text) => text && onText(text) });
    } catch (e) {
      // The cache may hold part of the turn: start the next one from an empty cache.
      this.cache.clear();
      this.cached = [];
      throw e;
    }
    // The cache holds the prompt and every generated token that was fed back (all but the last).
    this.cached = [...prompt, ...r.tokens].slice(0, this.cache.length);
    this.lastTurn = {
      reused: keep,
      fed: prompt.length - keep,
      refilled: keep < shared,
      contextFull: r.stopReason === 'length' && maxTokens < this.o.maxTokens,
    };
    this.messages = [...messages, { role: 'assistant', content: r.text }];
    return r;
  }
}

export interface ChatIo {
  input: NodeJS.ReadableStream;
  /** Replies only, so the output can be piped. */
  output: NodeJS.WritableStream;
  /** Notices, command acknowledgements and errors. */
  error: NodeJS.WritableStream;
  /** Show a '> ' prompt (a terminal on both ends). */
  interactive: boolean;
}

/** Reads lines until /exit or end of input; a failed turn is reported and the loop goes on. */
export async function chatLoop(session: ChatSession, io: ChatIo): Promise<void> {
  const rl = createInterface({ input: io.input, terminal: false });
  const ask = () => io.interactive && io.output.write('> ');
  ask();
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === '/exit' || line === '/quit') break;
    if (line === '/reset') {
      session.reset();
      io.error.write('(conversation reset)\n');
    } else if (line !== '') {
      let streamed = false;
      try {
        session.reply(line, (text) => {
          streamed = true;
          io.output.write(text);
        });
        io.output.write('\n');
        if (session.lastTurn.contextFull) io.error.write(`(the reply stopped: the context of ${session.capacity} positions is full; /reset to start over)\n`);
      } catch (e) {
        if (!(e instanceof KvpackError)) throw e;
        // End a reply cut short mid-line; a turn refused up front printed nothing.
        if (streamed) io.output.write('\n');
        io.error.write(`kvpack: ${e.message}\n`);
      }
    }
    ask();
  }
  rl.close();
}

interface ChatOpts extends CacheFlags, ThreadsFlag, SamplingFlags {
  model: string;
  nPredict: number;
  system?: string;
  ctxSize?: number;
}

export function register(program: Command): void {
  const cmd = program
    .command('chat')
    .description('chat with a GGUF model through its chat template (/reset, /exit); the KV cache carries over between turns')
    .requiredOption('-m, --model <path>', 'model file (.gguf with a tokenizer)')
    .option('-n, --n-predict <n>', 'most tokens per reply', intArg('-n', 1), 512)
    .option('--system <text>', 'system prompt');
  addSamplingFlags(addThreadsFlag(addCacheFlags(cmd)))
    .option('-c, --ctx-size <n>', 'cache capacity in positions (default: the training context capped at 4096)', intArg('-c', 1))
    .action((o: ChatOpts) => chatCommand(o));
}

async function chatCommand(o: ChatOpts): Promise<void> {
  const policy = policyFromFlags(o);
  const attention = attentionFromFlags(o);
  applyThreads(o);
  const model = loadModel(o.model);
  if (!model.tokenizer) throw new ArgumentError(`${o.model}: ${model.tokenizerProblem ?? 'no tokenizer'}; chat needs a model with a tokenizer`);
  const cache = model.createCache({ policy, capacity: o.ctxSize ?? defaultCapacity(model.hp.nCtxTrain), attention });
  try {
    const session = new ChatSession(model, cache, {
      system: o.system,
      maxTokens: o.nPredict,
      sampler: samplerFromFlags(o),
      stop: o.stop.filter((x) => x !== ''),
    });
    if (session.notice) console.error(`kvpack: ${session.notice}`);
    const interactive = !!process.stdin.isTTY && !!process.stdout.isTTY;
    await chatLoop(session, { input: process.stdin, output: process.stdout, error: process.stderr, interactive });
  } finally {
    cache.dispose();
  }
}
