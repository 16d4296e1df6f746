// `kvpack serve`: an OpenAI-compatible HTTP server over the compressed KV cache, with llama-server's flag
// names. Runs until SIGTERM/SIGINT, then drains in-flight requests and returns (exit 0).
import type { Command } from 'commander';
import { ArgumentError, redactUrl } from '../errors.js';
import { startServer } from '../server/server.js';
import { intArg } from './args.js';
import { addCacheFlags, attentionFromFlags, policyFromFlags, type CacheFlags } from './cache-flags.js';
import { addThreadsFlag, applyThreads, type ThreadsFlag } from './threads-flag.js';

/**
 * Prefix-cache granularity: 64 gave the most reuse of a shared system prompt for the least stored bytes of
 * 32, 64, 128, 256 (README, `npm run bench:prefix`); 256 never resumed a prompt under 257 tokens.
 */
const SERVE_CHUNK_TOKENS = 64;

interface ServeFlags extends CacheFlags, ThreadsFlag {
  model: string;
  alias?: string;
  host: string;
  port: number;
  parallel: number;
  ctxSize?: number;
  cacheRam: number;
  slotSavePath?: string;
  apiKey?: string;
  timeout: number;
  contBatching: boolean;
  warmup: boolean;
  ubatchSize: number;
  chunkTokens: number;
  resumeEvery: number;
  maxQueue: number;
  bodyLimit: number;
  drainTimeout: number;
  kvStore?: string;
  kvStoreTtl: number;
  kvStoreTimeout: number;
  kvStoreKey?: string;
  kvStoreUnauthenticated?: boolean;
}

export function register(program: Command): void {
  const cmd = program
    .command('serve')
    .description('OpenAI-compatible server (chat/completions, completions, slots, metrics) over a compressed KV cache')
    .requiredOption('-m, --model <path>', 'model file (.gguf with a tokenizer) or Hugging Face directory')
    .option('-a, --alias <name>', 'model name in responses and /v1/models (default: the file or directory name)')
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 = any free one)', intArg('--port', 0, 65535), 8080)
    .option('--parallel <n>', 'slots: requests decoded at once (-np)', intArg('--parallel', 1, 256), 1)
    .option('-c, --ctx-size <n>', 'positions per slot (default: the training context capped at 4096)', intArg('-c', 2))
    .option('--cache-ram <MiB>', 'prefix-cache budget in MiB of packed KV (-cram; 0 = off)', intArg('--cache-ram', 0), 8192)
    .option('--slot-save-path <dir>', 'directory for POST /slots/:id?action=save|restore files')
    .option('--api-key <key>', 'require "Authorization: Bearer KEY" (health and models stay public)')
    .option('--timeout <s>', 'socket inactivity and request-receive timeout in seconds (-to)', intArg('--timeout', 1), 600)
    .option('--no-cont-batching', 'decode each slot in its own forward pass (-nocb; for comparison)')
    .option('--no-warmup', 'skip the warm-up (a short prompt and up to 32 decode steps on a throwaway cache, at most 2 s) before ready')
    .option('--ubatch-size <n>', 'prompt tokens per prefill step, interleaved with decoding (-ub)', intArg('--ubatch-size', 1), 128)
    .option('--chunk-tokens <n>', `cache chunk size = prefix-cache granularity (multiple of 32)`, intArg('--chunk-tokens', 32), SERVE_CHUNK_TOKENS)
    .option(
      '--resume-every <chunks>',
      'also keep resume rows every N chunks of a prompt, locally and in --kv-store (0 = only at prompt ends and where prompts diverged)',
      intArg('--resume-every', 0),
      0,
    )
    .option('--max-queue <n>', 'requests waiting for a slot before 429', intArg('--max-queue', 0), 64)
    .option('--body-limit <bytes>', 'largest request body (413 above)', intArg('--body-limit', 1024), 8 << 20)
    .option('--drain-timeout <s>', 'on SIGTERM, longest wait for in-flight requests', intArg('--drain-timeout', 0), 30)
    .option(
      '--kv-store <url>',
      'share prefix chunks with other instances: redis://HOST:PORT[/DB], rediss://..., redis-cluster://h1:p1,h2:p2 (password in the URL or KVPACK_REDIS_PASSWORD)',
    )
    .option('--kv-store-ttl <s>', 'expiry of every chunk written to the store', intArg('--kv-store-ttl', 1), 86400)
    .option('--kv-store-timeout <ms>', 'longest a request waits for its remote lookup before prefilling without it', intArg('--kv-store-timeout', 1), 500)
    .option('--kv-store-key <key>', "secret (16+ bytes, the same on every instance) the store's values are signed with (HMAC-SHA256); default KVPACK_STORE_KEY")
    .option(
      '--kv-store-unauthenticated',
      'run --kv-store without a key: values are only checksummed, so anyone who can write to the store feeds every instance',
    );
  addThreadsFlag(addCacheFlags(cmd)).action((o: ServeFlags) => serveCommand(o));
}

async function serveCommand(o: ServeFlags): Promise<void> {
  if (o.chunkTokens % 32 !== 0) throw new ArgumentError(`--chunk-tokens must be a multiple of 32, got ${o.chunkTokens}`);
  const policy = policyFromFlags(o);
  const attention = attentionFromFlags(o);
  applyThreads(o);
  const server = await startServer({
    modelPath: o.model,
    alias: o.alias,
    host: o.host,
    port: o.port,
    parallel: o.parallel,
    ctx: o.ctxSize,
    policy,
    attention,
    chunkTokens: o.chunkTokens,
    resumeEvery: o.resumeEvery,
    cacheRamBytes: o.cacheRam * 2 ** 20,
    queueMax: o.maxQueue,
    batching: o.contBatching,
    prefillChunk: o.ubatchSize,
    slotSavePath: o.slotSavePath,
    apiKey: o.apiKey,
    timeoutS: o.timeout,
    bodyLimit: o.bodyLimit,
    drainTimeoutMs: o.drainTimeout * 1000,
    kvStore: o.kvStore,
    kvStoreTtlS: o.kvStoreTtl,
    kvStoreTimeoutMs: o.kvStoreTimeout,
    kvStoreKey: o.kvStoreKey,
    kvStoreUnauthenticated: o.kvStoreUnauthenticated,
    noWarmup: !o.warmup,
    onWarmup: (r) => console.error(`kvpack serve: warm-up: ${r.promptTokens} prompt tokens and ${r.steps} decode steps in ${Math.round(r.ms)} ms`),
  });
  if (o.kvStore && (server.store as { unauthenticated?: boolean } | null)?.unauthenticated) {
    console.error(
      "kvpack serve: WARNING: --kv-store-unauthenticated: the shared store's values are NOT signed; anyone who can write to it can change what every instance and tenant reads. Set --kv-store-key / KVPACK_STORE_KEY.",
    );
  }
  const stopped = new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      console.error(`kvpack serve: ${sig}: draining in-flight requests`);
      void server.shutdown().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  try {
    await server.ready;
  } catch (e) {
    await server.shutdown();
    throw e;
  }
  const e = server.ctx.engine!;
  console.error(
    `kvpack serve: ${server.url} (${server.ctx.modelName}; ${o.parallel} slot(s) x ${e.o.ctx} positions; K ${e.policy.k} / V ${e.policy.v}; prefix cache ${o.cacheRam} MiB${o.kvStore ? `; remote store ${redactUrl(o.kvStore)}` : ''})`,
  );
  if (e.remoteProblem) console.error(`kvpack serve: ${e.remoteProblem}`);
  await stopped;
  console.error('kvpack serve: stopped');
}
