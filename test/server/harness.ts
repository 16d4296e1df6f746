// Server tests' harness: a tiny chat model written once per process, servers on 127.0.0.1:0 started with
// test-sized defaults, the official openai client pointed at them, and raw fetch for what it cannot send.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServer, type RunningServer, type ServeOptions } from '../../src/server/server.js';
import { CHATML, writeChatModel } from '../fixtures/chat-model.js';

export const tmp = mkdtempSync(join(tmpdir(), 'kvpack-serve-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

let chatPath: string | undefined;
/** The tiny qwen2 chat model's GGUF (ChatML template, trained BPE vocab, random weights). */
export function chatModelPath(): string {
  return (chatPath ??= writeChatModel(tmp, 'tiny-chat', { template: CHATML }));
}

export const DEFAULTS: Omit<ServeOptions, 'modelPath'> = {
  host: '127.0.0.1',
  port: 0,
  parallel: 2,
  ctx: 512,
  policy: { k: 'q8_0', v: 'q8_0', window: 16, sinks: 4 },
  attention: {},
  chunkTokens: 32,
  cacheRamBytes: 64 << 20,
  queueMax: 16,
  batching: true,
  prefillChunk: 64,
  timeoutS: 30,
  bodyLimit: 1 << 20,
  drainTimeoutMs: 5000,
};

export interface TestServer {
  server: RunningServer;
  url: string;
  client: OpenAI;
  close(): Promise<void>;
}

export async function serve(o: Partial<ServeOptions> = {}): Promise<TestServer> {
  const server = await startServer({ ...DEFAULTS, modelPath: o.modelPath ?? chatModelPath(), ...o });
  await server.ready;
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: o.apiKey ?? 'none', maxRetries: 0, timeout: 30_000 });
  return { server, url: server.url, client, close: () => server.shutdown() };
}

/** POSTs JSON (or a raw string) and returns status, headers and the parsed body. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: any }> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, json };
}

/** One metric's value from /metrics text (first sample matching name and labels). */
export async function metric(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const re = new RegExp(`^${name.replace(/[:]/g, '\\:')}${labels ? `\\{${labels}\\}` : '(\\{[^}]*\\})?'} (\\S+)$`, 'm');
  const m = re.exec(text);
  if (!m) throw new Error(`metric ${name}${labels ? `{${labels}}` : ''} not in /metrics`);
  return Number(m[m.length - 1]);
}

/** Extra body fields the openai client passes through (llama-server's and kvpack's). */
export type Extra = { ignore_eos?: boolean; cache_salt?: string; id_slot?: number; top_k?: number; min_p?: number };

/** `kvpack serve` as a child process (its own event loop and RSS, as in production); resolves once it listens and loaded. */
export async function serveChild(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ url: string; child: ChildProcess; stderr: () => string; close(): Promise<void> }> {
  const bin = fileURLToPath(new URL('../../../bin/kvpack.js', import.meta.url));
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /kvpack serve: (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`kvpack serve exited ${code}: ${err}`)));
  });
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { url, child, stderr: () => err, close };
}

/** Resident memory of a process (Linux /proc). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}
