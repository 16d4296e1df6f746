// /metrics: llama-server's metric names (llamacpp:*) plus kvpack's own (compressed cache bytes by region,
// effective bits, prefix-cache counters, TTFT and inter-token latency), on a registry per server.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheBytes } from '../cache/kvcache.js';

/** What the gauges read when scraped. */
export interface MetricsSource {
  /** Per busy or holding slot: its cache bytes and positions. */
  slotCaches(): { bytes: CacheBytes; positions: number }[];
  /** Float values a position holds across layers (K and V): positions x this = values stored. */
  valuesPerPosition: number;
  processing(): number;
  deferred(): number;
  prefix(): { entries: number; bytes: number; packed: number };
}

const REGIONS = ['sinks', 'anchors', 'bulk', 'window', 'staging'] as const;
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class ServerMetrics {
  readonly registry = new Registry();
  readonly promptTokens: Counter;
  readonly promptSeconds: Counter;
  readonly predictedTokens: Counter;
  readonly predictedSeconds: Counter;
  readonly decodeCalls: Counter;
  readonly busyPerDecode: Gauge;
  readonly prefixQueries: Counter;
  readonly prefixHits: Counter;
  readonly prefixMisses: Counter;
  readonly remoteHits: Counter;
  readonly ttft: Histogram;
  readonly interToken: Histogram;
  readonly requestErrors: Counter;

  constructor(src: MetricsSource) {
    const registers = [this.registry];
    const counter = (name: string, help: string) => new Counter({ name, help, registers });
    this.promptTokens = counter('llamacpp:prompt_tokens_total', 'Prompt tokens evaluated (cached ones excluded).');
    this.promptSeconds = counter('llamacpp:prompt_seconds_total', 'Prompt evaluation time.');
    this.predictedTokens = counter('llamacpp:tokens_predicted_total', 'Tokens generated.');
    this.predictedSeconds = counter('llamacpp:tokens_predicted_seconds_total', 'Generation time.');
    this.decodeCalls = counter('llamacpp:n_decode_total', 'Forward passes run.');
    this.busyPerDecode = new Gauge({ name: 'llamacpp:n_busy_slots_per_decode', help: 'Sequences in the last decode pass.', registers });
    this.prefixQueries = counter('kvpack:prefix_cache_queries_tokens_total', 'Prompt tokens looked up in the slot and prefix caches.');
    this.prefixHits = counter('kvpack:prefix_cache_hits_tokens_total', 'Prompt tokens served from a cache instead of computed.');
    this.prefixMisses = counter('kvpack:prefix_cache_misses_total', 'Requests that reused no cached token.');
    this.remoteHits = counter('kvpack:prefix_cache_remote_hits_tokens_total', 'Prompt tokens restored from entries built of remote-store chunks.');
    this.requestErrors = new Counter({
      name: 'kvpack:request_errors_total',
      help: 'Requests answered with an error, by status.',
      labelNames: ['status'],
      registers,
    });
    this.ttft = new Histogram({
      name: 'kvpack:time_to_first_token_seconds',
      help: 'Request arrival to first generated token.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.interToken = new Histogram({
      name: 'kvpack:inter_token_latency_seconds',
      help: 'Time between consecutive generated tokens of a request.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const gauge = (name: string, help: string, collect: (g: Gauge) => void, labelNames: string[] = []) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        collect() {
          collect(this);
        },
      });
    gauge('llamacpp:requests_processing', 'Requests in a slot.', (g) => g.set(src.processing()));
    gauge('llamacpp:requests_deferred', 'Requests waiting for a slot.', (g) => g.set(src.deferred()));
    gauge('llamacpp:kv_cache_tokens', "Positions held by the slots' caches.", (g) => g.set(src.slotCaches().reduce((s, c) => s + c.positions, 0)));
    gauge(
      'kvpack:kv_cache_bytes',
      "Packed bytes held by the slots' caches, by region.",
      (g) => {
        const caches = src.slotCaches();
        for (const r of REGIONS)
          g.set(
            { region: r },
            caches.reduce((s, c) => s + c.bytes[r], 0),
          );
        g.set(
          { region: 'allocated' },
          caches.reduce((s, c) => s + c.bytes.allocated, 0),
        );
      },
      ['region'],
    );
    gauge('kvpack:kv_cache_effective_bits', "Bits per stored K/V value over the slots' caches (16 = f16).", (g) => {
      const caches = src.slotCaches();
      const values = caches.reduce((s, c) => s + c.positions, 0) * src.valuesPerPosition;
      g.set(values > 0 ? (8 * caches.reduce((s, c) => s + c.bytes.total, 0)) / values : 0);
    });
    gauge('kvpack:prefix_cache_entries', 'Prefix-cache entries.', (g) => g.set(src.prefix().entries));
    gauge(
      'kvpack:prefix_cache_bytes',
      'Bytes the prefix cache holds: allocated (bounded by --cache-ram) and packed K/V data.',
      (g) => {
        const p = src.prefix();
        g.set({ kind: 'allocated' }, p.bytes);
        g.set({ kind: 'packed' }, p.packed);
      },
      ['kind'],
    );
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
