// The invariance suite's harness: the models it runs on (a synthetic one always, the shared ones when
// ../shared/models is present), the schemes, prompts as token ids, and the one answer every way of serving a
// request must give: its greedy tokens and their logprobs, compared bit for bit.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import OpenAI from 'openai';
import type { CachePolicy } from '../../src/cache/policy.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import { fromRoot } from '../paths.js';
import { chatModelPath, type TestServer } from '../server/harness.js';

export interface SuiteModel {
  name: string;
  path: string;
  /** The schemes run on it (the suite's time: the 6.8M-parameter model runs f16 and q2k only). */
  schemes: typeof SCHEMES;
}

const SHARED = ['stories260K.gguf', 'tinystories-656k.gguf', 'pydoc-6.8m.gguf'];

/** The synthetic model, then each shared model found (a missing one is named once, with the reason). */
export function suiteModels(file: string): SuiteModel[] {
  const out: SuiteModel[] = [{ name: 'synthetic tiny-chat', path: chatModelPath(), schemes: SCHEMES }];
  for (const f of SHARED) {
    const path = fromRoot('..', 'shared', 'models', f);
    if (existsSync(path)) out.push({ name: f, path, schemes: f.startsWith('pydoc') ? SCHEMES.filter((x) => x.name === 'f16' || x.name === 'q2k') : SCHEMES });
    else console.log(`${file}: skipping ${f}: ${path} is absent (../shared/models not checked out)`);
  }
  return out;
}

/** A small exact window and sinks, so the prompts below read most positions packed. */
export const REGIONS = { window: 16, sinks: 4 };

/** Every scheme the suite runs, plus one with decode anchors. */
export const SCHEMES: { name: string; policy: CachePolicy }[] = [
  ...['f16', 'q8_0', 'q4_0', 'q2k'].map((name) => ({ name, policy: schemePolicy(name, REGIONS) })),
  { name: 'q4_0+anchors', policy: schemePolicy('q4_0', { ...REGIONS, anchors: { count: 4 } }) },
];

/** Token ids a model of any vocabulary accepts (prompts as ids: lengths and chunk boundaries are exact). */
export const ids = (n: number, seed: number, vocab = 256) =>
  Array.from({ length: n }, (_, i) => 3 + ((i * 37 + seed * 101 + ((i * i) % 17)) % (Math.min(vocab, 256) - 3)));

export interface Answer {
  text: string;
  logprobs: (number | null)[];
  cached: number;
}

export async function answer(s: TestServer, prompt: number[], extra: Record<string, unknown> = {}, maxTokens = 6): Promise<Answer> {
  const r = await s.client.completions.create({
    model: 'x',
    prompt,
    max_tokens: maxTokens,
    temperature: 0,
    logprobs: 1,
    ignore_eos: true,
    ...extra,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  const c = r.choices[0]!;
  return { text: c.text, logprobs: c.logprobs!.token_logprobs ?? [], cached: r.usage!.prompt_tokens_details?.cached_tokens ?? 0 };
}

/** What must be identical: the tokens (as text) and each one's logprob. */
export const same = (a: Answer) => ({ text: a.text, logprobs: a.logprobs });

export interface SpawnedServer {
  url: string;
  client: OpenAI;
  stop(): Promise<number | null>;
}

/** A real `kvpack serve` process on a free port (as a user starts it); stop() sends SIGTERM and awaits the exit code. */
export async function spawnServe(args: string[]): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [fromRoot('bin', 'kvpack.js'), 'serve', '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /kvpack serve: (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`kvpack serve exited ${code}: ${err}`)));
  });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
  return {
    url,
    client,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
