// llama.cpp (node-llama-cpp's prebuilt CPU binary) as a reference engine: evaluates a prompt, then decodes
// token by token, returning the raw logits before each decision (controlledEvaluate with `logits: true`).
import type { ControlledEvaluateInputItem, Llama, LlamaModel, Token } from 'node-llama-cpp';
import type { StepRun } from './compare.js';

export type CacheType = 'f16' | 'q8_0' | 'q4_0';

export interface LlamaCppSettings {
  /** llama.cpp KV cache type for K and V (experimentalKvCacheKeyType/ValueType). */
  cache: CacheType;
  /** A different V type than `cache` (e.g. to tell K from V differences apart). */
  cacheV?: CacheType;
  /** Flash attention; llama.cpp requires it for a quantized V cache. */
  flashAttention: boolean;
  threads?: number;
}

/** What the crosscheck runs ask of llama.cpp; a string from openLlamaCpp says why it is unavailable. */
export class LlamaCpp {
  private constructor(private readonly llama: Llama) {}

  /** Loads the native addon (never builds it); returns the reason as a string when it cannot load. */
  static async open(): Promise<LlamaCpp | string> {
    // Since llama.cpp PR #21038 a quantized cache stores Hadamard-rotated Q/K/V (head sizes >= 64); turn it
    // off so its q8_0/q4_0 cells hold the plain ggml blocks ours do. Read by llama.cpp at context creation.
    process.env['LLAMA_ATTN_ROT_DISABLE'] = '1';
    try {
      const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
      return new LlamaCpp(await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error }));
    } catch (e) {
      return `node-llama-cpp unavailable: ${(e as Error).message}`;
    }
  }

  async loadModel(path: string): Promise<LlamaModel> {
    return this.llama.loadModel({ modelPath: path, gpuLayers: 0 });
  }

  /**
   * Evaluates `prompt` in one batch, then `steps` single-token decodes; the token fed at step i is
   * `force[i]` when given, else the argmax of the logits (greedy).
   */
  async run(model: LlamaModel, prompt: readonly number[], steps: number, s: LlamaCppSettings, force?: readonly number[]): Promise<StepRun> {
    const ctx = await model.createContext({
      contextSize: prompt.length + steps + 1,
      batchSize: Math.max(prompt.length, 1),
      flashAttention: s.flashAttention,
      threads: s.threads ?? 1,
      experimentalKvCacheKeyType: GGML_NAME[s.cache],
      experimentalKvCacheValueType: GGML_NAME[s.cacheV ?? s.cache],
      ignoreMemorySafetyChecks: true,
    });
    try {
      const seq = ctx.getSequence();
      const vocab = vocabOf(model);
      const next = { generateNext: { logits: true, options: { temperature: 0 } } };
      const logits: Float32Array[] = [];
      const tokens: number[] = [];
      let input: ControlledEvaluateInputItem[] = [...(prompt.slice(0, -1) as Token[]), [prompt[prompt.length - 1] as Token, next]];
      for (let i = 0; i <= steps; i++) {
        const out = await seq.controlledEvaluate(input);
        const row = denseLogits(out[input.length - 1]?.next.logits, vocab);
        logits.push(row);
        if (i === steps) break;
        const id = force?.[i] ?? argmax(row);
        tokens.push(id);
        input = [[id as Token, next]];
      }
      return { tokens, logits: logits.slice(0, steps) };
    } finally {
      await ctx.dispose();
    }
  }

  async dispose(): Promise<void> {
    await this.llama.dispose();
  }
}

const GGML_NAME = { f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0' } as const;

/** Vocabulary size: the length of tokenizer.ggml.tokens (node-llama-cpp exposes no n_vocab). */
function vocabOf(model: LlamaModel): number {
  const tokens = (model.fileInfo.metadata.tokenizer?.ggml as { tokens?: readonly string[] } | undefined)?.tokens;
  if (!tokens) throw new Error('llama.cpp model has no tokenizer.ggml.tokens');
  return tokens.length;
}

/** The logits map (sorted by value) as a dense row; a missing entry would mean a filtered list, so it throws. */
function denseLogits(m: Map<Token, number> | undefined, vocab: number): Float32Array {
  if (!m) throw new Error('llama.cpp returned no logits');
  if (m.size !== vocab) throw new Error(`llama.cpp returned ${m.size} logits for a vocabulary of ${vocab}`);
  const row = new Float32Array(vocab);
  for (const [id, v] of m) row[id] = v;
  return row;
}

export function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}
