// The load generator: N concurrent clients over loopback for a bounded time, each looping over streaming
// requests with faults mixed in (mid-stream disconnects, malformed JSON, oversized bodies, wrong types).
// Every outcome is checked; anything unexpected counts as an error with its reason.
import { Prng } from '../src/numeric/prng.js';

export interface LoadOptions {
  url: string;
  clients: number;
  durationMs: number;
  /** Largest body the server takes (oversized requests send more). */
  bodyLimit: number;
  seed?: number;
  prompts?: readonly string[];
}

export interface LoadResult {
  requests: number;
  streams: number;
  tokens: number;
  disconnects: number;
  faults: number;
  errors: string[];
  /** Milliseconds: first content chunk after sending, and gaps between content chunks. */
  ttft: number[];
  interToken: number[];
  elapsedMs: number;
}

const PROMPTS = [
  'Once upon a time',
  'The little dog ran to the park and',
  'She looked at the sky and said',
  'One day a bird flew over the river.',
  'Tom had a red ball. He',
];

type Outcome = { kind: 'stream'; tokens: number; ttft?: number; gaps: number[] } | { kind: 'disconnect' } | { kind: 'fault' };

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const r: LoadResult = { requests: 0, streams: 0, tokens: 0, disconnects: 0, faults: 0, errors: [], ttft: [], interToken: [], elapsedMs: 0 };
  const t0 = performance.now();
  const deadline = t0 + o.durationMs;
  const prompts = o.prompts ?? PROMPTS;
  await Promise.all(
    Array.from({ length: o.clients }, async (_, c) => {
      const rng = new Prng((o.seed ?? 1) * 1000 + c);
      while (performance.now() < deadline) {
        r.requests++;
        try {
          const out = await oneRequest(o, rng, prompts);
          if (out.kind === 'stream') {
            r.streams++;
            r.tokens += out.tokens;
            if (out.ttft !== undefined) r.ttft.push(out.ttft);
            r.interToken.push(...out.gaps);
          } else if (out.kind === 'disconnect') r.disconnects++;
          else r.faults++;
        } catch (e) {
          r.errors.push(`client ${c}: ${(e as Error).message}`);
        }
      }
    }),
  );
  r.elapsedMs = performance.now() - t0;
  return r;
}

async function oneRequest(o: LoadOptions, rng: Prng, prompts: readonly string[]): Promise<Outcome> {
  const x = rng.next();
  const prompt = prompts[Math.floor(rng.next() * prompts.length)]!;
  if (x < 0.06) return expectError(o.url, '{"messages": [{"role": "user", "content": "hi"}', 400);
  if (x < 0.12) return expectError(o.url, JSON.stringify({ prompt: 'x'.repeat(o.bodyLimit + 1) }), 413, '/v1/completions');
  if (x < 0.18) return expectError(o.url, JSON.stringify({ prompt, max_tokens: 'many' }), 400, '/v1/completions', 'max_tokens');
  const chat = rng.next() < 0.5;
  const body = chat
    ? {
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 4 + Math.floor(rng.next() * 28),
        stream: true,
        stream_options: { include_usage: true },
        temperature: rng.next() < 0.5 ? 0 : 0.8,
        seed: Math.floor(rng.next() * 1e6),
      }
    : { prompt, max_tokens: 4 + Math.floor(rng.next() * 28), stream: true, stream_options: { include_usage: true }, temperature: 0.7 };
  // Disconnect after a few chunks: the server must cancel and free the slot.
  const dropAfter = x < 0.26 ? 1 + Math.floor(rng.next() * 4) : Infinity;
  return stream(o.url, chat ? '/v1/chat/completions' : '/v1/completions', body, dropAfter);
}

async function expectError(url: string, body: string, status: number, path = '/v1/chat/completions', param?: string): Promise<Outcome> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const j = (await res.json()) as { error?: { message?: string; param?: string | null } };
  if (res.status !== status) throw new Error(`${path}: expected ${status}, got ${res.status} ${JSON.stringify(j).slice(0, 200)}`);
  if (typeof j.error?.message !== 'string') throw new Error(`${path}: ${status} without an error message`);
  if (param && j.error.param !== param) throw new Error(`${path}: ${status} names ${j.error.param}, not ${param}`);
  return { kind: 'fault' };
}

/** Streams one request, checking the protocol: one id, a finish chunk, a usage chunk, then [DONE]. */
async function stream(url: string, path: string, body: unknown, dropAfter: number): Promise<Outcome> {
  const ac = new AbortController();
  const sent = performance.now();
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
  if (res.status !== 200) throw new Error(`${path}: status ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let chunks = 0;
  let ttft: number | undefined;
  let last = 0;
  const gaps: number[] = [];
  let finished = false;
  let usage = false;
  let done = false;
  const ids = new Set<string>();
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ')) throw new Error(`${path}: bad SSE line ${JSON.stringify(ev.slice(0, 80))}`);
      const data = ev.slice(6);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const j = JSON.parse(data) as {
        id: string;
        error?: unknown;
        usage?: unknown;
        choices: { delta?: { content?: string }; text?: string; finish_reason?: string | null }[];
      };
      if (j.error) throw new Error(`${path}: error event ${JSON.stringify(j.error)}`);
      ids.add(j.id);
      if (j.usage) usage = true;
      const ch = j.choices[0];
      if (ch?.finish_reason) finished = true;
      const text = ch?.delta?.content ?? ch?.text;
      if (text) {
        const now = performance.now();
        if (ttft === undefined) ttft = now - sent;
        else gaps.push(now - last);
        last = now;
        chunks++;
        if (chunks >= dropAfter) {
          ac.abort();
          await reader.cancel().catch(() => {});
          return { kind: 'disconnect' };
        }
      }
    }
  }
  if (!done || !finished || !usage) throw new Error(`${path}: stream ended without ${!finished ? 'a finish chunk' : !usage ? 'a usage chunk' : '[DONE]'}`);
  if (ids.size !== 1) throw new Error(`${path}: ${ids.size} different ids in one stream`);
  return { kind: 'stream', tokens: chunks, ttft, gaps };
}

/** The p-th percentile (0..100) of xs. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
