// The measurements bench:browser makes twice, in Node and in a Chromium Worker, with the same code: greedy
// decode tokens/s of a model over a cache scheme, and attention throughput over a synthetic cache (one
// decode query against every position). Browser-safe imports only (this module is bundled for the page).
import { KvCache } from '../src/cache/kvcache.js';
import { poolStats } from '../src/kernels/runtime/pool.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { generate } from '../src/model/generate.js';
import type { Model } from '../src/model/model.js';
import { Prng } from '../src/numeric/prng.js';
import { median, timeMedian } from './harness.js';

export const PROMPT = 'Once upon a time';

/** The synthetic cache of the attention cases: GQA 4 over 4 KV heads of 128 dims (a 7-8B model's head shape). */
export const ATTEND_SHAPE = { kvHeads: 4, heads: 16, headDim: 128 } as const;

export interface Row {
  kind: 'decode' | 'attend';
  scheme: string;
  threads: number;
  /** decode: tokens/s; attend: positions x heads per second (millions). */
  value: number;
  detail: string;
}

/** Median decode tokens/s of `rounds` greedy runs of `tokens` tokens (window 32, sinks 4). */
export function decodeRow(model: Model, scheme: string, tokens: number, threads: number, rounds: number): Row {
  const prompt = model.tokenizer ? model.tokenizer.encode(PROMPT) : [1];
  const rates: number[] = [];
  for (let r = 0; r < rounds + 1; r++) {
    const cache = model.createCache({ policy: schemePolicy(scheme, { window: 32, sinks: 4 }), capacity: Math.max(prompt.length + tokens, 64) });
    // Never stop early: every round decodes the same number of tokens.
    const g = generate(model, cache, prompt, { maxTokens: tokens, sampler: { temperature: 0 }, eos: [] });
    cache.dispose();
    if (r > 0) rates.push(g.decodeTps); // round 0 warms up (tier-up, first pool use)
  }
  return { kind: 'decode', scheme, threads, value: median(rates), detail: `${tokens} tokens, median of ${rounds}` };
}

/** Attention over `positions` cached positions: one decode query, every head; millions of position-heads/s. */
export function attendRow(scheme: string, positions: number, threads: number, budgetS: number): Row {
  const { kvHeads, heads, headDim } = ATTEND_SHAPE;
  const cache = new KvCache({ layers: 1, kvHeads, headDim, capacity: positions + 1, policy: schemePolicy(scheme, { window: 32, sinks: 4 }) });
  const rng = new Prng(7);
  const step = 1024;
  for (let p = 0; p < positions; p += step) {
    const n = Math.min(step, positions - p);
    cache.append(0, rng.normals(n * kvHeads * headDim), rng.normals(n * kvHeads * headDim));
  }
  const q = rng.normals(heads * headDim);
  const out = new Float32Array(heads * headDim);
  const s = timeMedian(() => cache.attend(0, q, out), budgetS, 5, 400);
  const bytes = cache.nbytes().total;
  cache.dispose();
  return {
    kind: 'attend',
    scheme,
    threads,
    value: (positions * heads) / s / 1e6,
    detail: `${positions} positions, ${(s * 1e3).toFixed(2)} ms/call, ${(bytes / s / 1e9).toFixed(1)} GB/s of cache`,
  };
}

export interface BenchPlan {
  threads: number[];
  decodeSchemes: string[];
  decodeTokens: number;
  rounds: number;
  attendSchemes: string[];
  positions: number;
  budgetS: number;
}

/**
 * Every row of the plan, `setThreads(n)` before each thread count (it returns the threads that run). Each
 * row's detail says how many attention jobs and kernel calls went to pool workers: on a loaded machine the
 * pool backs off to one thread, and a 2-thread row that used no worker measured one thread.
 */
export async function runPlan(model: Model, plan: BenchPlan, setThreads: (n: number) => Promise<number>): Promise<Row[]> {
  const rows: Row[] = [];
  const pooled = (row: () => Row): Row => {
    const a = poolStats();
    const r = row();
    const b = poolStats();
    return { ...r, detail: `${r.detail}; to workers: ${b.jobs - a.jobs} attention jobs, ${b.calls - a.calls} matmul calls` };
  };
  for (const t of plan.threads) {
    const got = await setThreads(t);
    for (const s of plan.decodeSchemes) rows.push(pooled(() => decodeRow(model, s, plan.decodeTokens, got, plan.rounds)));
    for (const s of plan.attendSchemes) rows.push(pooled(() => attendRow(s, plan.positions, got, plan.budgetS)));
  }
  return rows;
}
