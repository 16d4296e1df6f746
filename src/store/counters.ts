// Store counters: plain numbers for callers and tests, mirrored into prom-client metrics when a registry is given.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export const COUNTER_NAMES = [
  'hitChunks', // chunks returned by chain lookups
  'missChunks', // chunks asked for and not returned (after the first miss)
  'hitBytes', // payload bytes returned
  'readBytes', // value bytes received (hits, corrupt values, values past a miss in the same batch)
  'writtenChunks',
  'writtenBytes', // value bytes Redis acknowledged
  'droppedWrites', // puts dropped because the write-behind queue was full (oldest first)
  'failedWrites', // puts Redis did not take (down, timeout, OOM)
  'errors', // failed or timed-out commands, reads and writes alike
  'corrupt', // values refused on read (checksum, length, key echo, version) and deleted
] as const;
export type CounterName = (typeof COUNTER_NAMES)[number];
export type StoreOp = 'get' | 'set';

/** The last `size` latencies of one operation in ms, with their all-time count and sum. */
export class LatencySamples {
  readonly samples: number[] = [];
  count = 0;
  sumMs = 0;
  constructor(private readonly size = 256) {}

  add(ms: number): void {
    if (this.samples.length === this.size) this.samples.shift();
    this.samples.push(ms);
    this.count++;
    this.sumMs += ms;
  }
}

export type CounterValues = Record<CounterName, number>;

export class StoreCounters {
  readonly values: CounterValues = Object.fromEntries(COUNTER_NAMES.map((n) => [n, 0])) as CounterValues;
  readonly latency: Record<StoreOp, LatencySamples> = { get: new LatencySamples(), set: new LatencySamples() };
  private readonly sinks: { add(name: CounterName, n: number): void; observe(op: StoreOp, ms: number): void }[] = [];

  add(name: CounterName, n = 1): void {
    if (n === 0) return;
    this.values[name] += n;
    for (const s of this.sinks) s.add(name, n);
  }

  observe(op: StoreOp, ms: number): void {
    this.latency[op].add(ms);
    for (const s of this.sinks) s.observe(op, ms);
  }

  /** A copy of every counter (plain numbers). */
  snapshot(): CounterValues {
    return { ...this.values };
  }

  /** Mirrors future changes into `sink` (a metrics registry); counts so far are added once now. */
  attach(sink: { add(name: CounterName, n: number): void; observe(op: StoreOp, ms: number): void }): void {
    for (const n of COUNTER_NAMES) if (this.values[n] > 0) sink.add(n, this.values[n]);
    this.sinks.push(sink);
  }
}

const PROM: Readonly<Record<CounterName, [string, string]>> = {
  hitChunks: ['kvpack:remote_store_hit_chunks_total', 'Chunks served by the remote store'],
  missChunks: ['kvpack:remote_store_miss_chunks_total', 'Chunks looked up and not found (from the first miss of a chain on)'],
  hitBytes: ['kvpack:remote_store_hit_bytes_total', 'Payload bytes served by the remote store'],
  readBytes: ['kvpack:remote_store_read_bytes_total', 'Bytes read from the remote store'],
  writtenChunks: ['kvpack:remote_store_written_chunks_total', 'Chunks written to the remote store'],
  writtenBytes: ['kvpack:remote_store_written_bytes_total', 'Bytes written to the remote store'],
  droppedWrites: ['kvpack:remote_store_dropped_writes_total', 'Writes dropped because the write-behind queue was full'],
  failedWrites: ['kvpack:remote_store_failed_writes_total', 'Writes the remote store did not take'],
  errors: ['kvpack:remote_store_errors_total', 'Failed or timed-out remote store commands'],
  corrupt: ['kvpack:remote_store_corrupt_total', 'Remote values refused on read (checksum, length, key, version) and deleted'],
};

export interface StoreMetricsOptions {
  /** Tokens per chunk: adds hit/miss counters in tokens (the unit /metrics reports prefix reuse in). */
  chunkTokens?: number;
  /** Current write-behind queue depth in bytes, read at scrape time. */
  queueBytes?: () => number;
}

/** Registers the store's metrics on `registry` (once per registry: prom-client refuses duplicate names). */
export function registerStoreMetrics(registry: Registry, counters: StoreCounters, opts: StoreMetricsOptions = {}): void {
  const registers = [registry];
  const proms = Object.fromEntries(COUNTER_NAMES.map((n) => [n, new Counter({ name: PROM[n][0], help: PROM[n][1], registers })])) as Record<
    CounterName,
    Counter
  >;
  const T = opts.chunkTokens;
  const tokens = T
    ? {
        hitChunks: new Counter({ name: 'kvpack:remote_store_hit_tokens_total', help: 'Prompt tokens served by the remote store', registers }),
        missChunks: new Counter({
          name: 'kvpack:remote_store_miss_tokens_total',
          help: 'Prompt tokens looked up in the remote store and not found',
          registers,
        }),
      }
    : null;
  const latency = new Histogram({
    name: 'kvpack:remote_store_latency_seconds',
    help: 'Remote store round trips (a chain lookup batch or a write batch)',
    labelNames: ['op'],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const queueBytes = opts.queueBytes;
  if (queueBytes)
    new Gauge({
      name: 'kvpack:remote_store_queue_bytes',
      help: 'Bytes waiting in the write-behind queue',
      registers,
      collect() {
        this.set(queueBytes());
      },
    });
  counters.attach({
    add(name, n) {
      proms[name].inc(n);
      if (tokens && (name === 'hitChunks' || name === 'missChunks')) tokens[name].inc(n * T!);
    },
    observe(op, ms) {
      latency.observe({ op }, ms / 1000);
    },
  });
}
