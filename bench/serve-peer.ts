// The peer of `npm run bench:serve`, run as a child process with nothing of kvpack's running beside it:
// node-llama-cpp with one context of N sequences (its parallel-sequence batching puts every sequence's
// next token into one llama_decode), greedy, N streams at once; prints one JSON line of aggregate decode
// tokens/s per stream count. Flags: --model PATH --streams 1,2,4,8 --tokens N --threads T --kv f16|q8_0|q4_0
// (f16 when llama.cpp cannot hold the model's heads in that type: a head dim that is no multiple of 32).
import { loadavg } from 'node:os';
import { declareOptions, option } from './harness.js';
import { PROMPTS, aggregateTps, type StreamTiming } from './serve-streams.js';

type Tok = import('node-llama-cpp').Token;
const GGML_KV: Record<string, string> = { f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0' };

export interface PeerResult {
  threads: number;
  /** llama.cpp's KV cache type used. */
  kv: string;
  /** Aggregate decode tok/s by stream count. */
  tps: Record<string, number>;
  /** 1-minute load average before and after the run. */
  load: [number, number];
}

declareOptions('serve-peer', "bench:serve's peer: node-llama-cpp, N greedy sequences in one context; one JSON line", {
  '--model': { kind: 'str', help: 'GGUF (required)' },
  '--streams': { kind: 'ints', min: 1, help: 'stream counts', default: '1,2,4,8' },
  '--tokens': { kind: 'int', min: 1, help: 'decode tokens per stream', default: 64 },
  '--threads': { kind: 'int', min: 1, help: 'threads', default: 1 },
  '--kv': { kind: 'str', choices: ['f16', 'q8_0', 'q4_0'], help: "llama.cpp's cache type", default: 'q8_0' },
});
const modelPath = option('--model')!;
const counts = (option('--streams') ?? '1,2,4,8').split(',').map(Number);
const tokens = Number(option('--tokens') ?? 64);
const threads = Number(option('--threads') ?? 1);
let kv = GGML_KV[option('--kv') ?? 'q8_0'];
if (!kv) throw new Error(`serve-peer: llama.cpp has no cache type for --kv ${option('--kv')}`);
const load0 = loadavg()[0]!;
// Same setting as the crosscheck: a quantized cache without llama.cpp's Hadamard rotation (as ours stores it).
process.env['LLAMA_ATTN_ROT_DISABLE'] = '1';
const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: threads });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
// llama.cpp refuses quantized blocks that straddle heads (head dim 16): its default type then. (Checked
// up front: a failed context creation leaves its thread reservation behind and the next one never starts.)
if (kv !== 'F16' && headDim() % 32 !== 0) kv = 'F16';

function headDim(): number {
  const md = model.fileInfo.metadata as unknown as Record<string, Record<string, unknown>>;
  const a = md[String((md['general'] as { architecture?: string } | undefined)?.architecture)] as
    | { embedding_length?: number; attention?: { head_count?: number; key_length?: number } }
    | undefined;
  return a?.attention?.key_length ?? (a?.embedding_length ?? 0) / (a?.attention?.head_count ?? 1);
}

/** One round at `n` streams: each sequence evaluates its prompt, then decodes `tokens` tokens, all at once. */
async function round(n: number, decode: number): Promise<number> {
  const ctx = await model.createContext({
    sequences: n,
    contextSize: n * 256,
    batchSize: 512,
    threads: { ideal: threads, min: threads },
    flashAttention: true,
    experimentalKvCacheKeyType: kv as never,
    experimentalKvCacheValueType: kv as never,
  });
  try {
    const runs = Array.from({ length: n }, async (_, i): Promise<StreamTiming> => {
      const seq = ctx.getSequence();
      const prompt = model.tokenize(PROMPTS[i % PROMPTS.length]!) as Tok[];
      let first = 0;
      let got = 0;
      for await (const _t of seq.evaluate(prompt, { temperature: 0 })) {
        if (got++ === 0) first = performance.now();
        if (got >= decode) break;
      }
      return { first, end: performance.now(), tokens: got };
    });
    return aggregateTps(await Promise.all(runs));
  } finally {
    await ctx.dispose();
  }
}

const tps: Record<string, number> = {};
for (const n of counts) {
  await round(n, 8); // warm-up at this width
  tps[String(n)] = await round(n, tokens);
}
await model.dispose();
await llama.dispose();
const result: PeerResult = { threads, kv, tps, load: [load0, loadavg()[0]!] };
console.log(JSON.stringify(result));
