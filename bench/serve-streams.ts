// Concurrent greedy streams for bench:serve, shared by the kvpack side (HTTP to `kvpack serve`) and the
// node-llama-cpp peer (serve-peer.ts): the prompts and how aggregate decode tokens/s is counted.

export const PROMPTS = [
  'Once upon a time',
  'The little dog',
  'One day, a girl named Sue',
  'Tom and his mom went to',
  'There was a big tree',
  'The sun was hot and',
  'A cat sat on',
  'In the park, two friends',
];

/** One stream: when its first generated token arrived, when it ended, and how many tokens it generated. */
export interface StreamTiming {
  first: number;
  end: number;
  tokens: number;
}

/** Decode tokens per second over the window from the first stream's first token to the last stream's end (each stream's first token is prefill's). */
export function aggregateTps(rs: readonly StreamTiming[]): number {
  const t0 = Math.min(...rs.map((r) => r.first));
  const t1 = Math.max(...rs.map((r) => r.end));
  return rs.reduce((s, r) => s + r.tokens - 1, 0) / ((t1 - t0) / 1000);
}

/** One streaming completion from `kvpack serve`; tokens from the usage chunk (a chunk may carry no text: a partial UTF-8 character). */
export async function kvpackStream(url: string, prompt: string, tokens: number): Promise<StreamTiming> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: tokens, temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
  });
  if (res.status !== 200) throw new Error(`kvpack serve: status ${res.status}: ${await res.text()}`);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  let first = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (first === 0) first = performance.now();
    text += dec.decode(value, { stream: true });
  }
  const end = performance.now();
  const m = /"completion_tokens":(\d+)/.exec(text);
  if (!m) throw new Error('kvpack serve: no usage chunk');
  return { first, end, tokens: Number(m[1]) };
}

export async function kvpackAggregate(url: string, streams: number, tokens: number): Promise<number> {
  return aggregateTps(await Promise.all(Array.from({ length: streams }, (_, i) => kvpackStream(url, PROMPTS[i % PROMPTS.length]!, tokens))));
}
