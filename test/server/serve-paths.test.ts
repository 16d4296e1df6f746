// Paths as users give them: `kvpack serve -m DIR` serves a Hugging Face directory (as `run -m DIR` loads
// it), and `kvpack web --models` takes a relative directory; errors are one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { fromRoot } from '../paths.js';
import { writeHfDir } from '../fixtures/hf-dir.js';
import { byteLevelFixture } from '../fixtures/hf-tokenizer.js';
import { serveChild, tmp } from './harness.js';

/** A tiny qwen2 HF directory with a byte-level tokenizer (no merges; bytes below 95 only, inside its 96-token vocab). */
function hfModelDir(name: string): string {
  const dir = join(tmp, 'models', name);
  mkdirSync(dir, { recursive: true });
  writeHfDir(dir, 'qwen2');
  const t = byteLevelFixture({ pre: 'gpt-2', merges: 0, specials: [], bos: null, eos: '<|endoftext|>' });
  // The model has 96 tokens: keep bytes 0-94 (prompts in upper case) and EOS as 95.
  const tj = t.tokenizer as { model: { vocab: Record<string, number> }; added_tokens: { id: number }[] };
  tj.model.vocab = Object.fromEntries(Object.entries(tj.model.vocab).filter(([, id]) => id < 95));
  tj.added_tokens.forEach((a) => (a.id = 95));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tj));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(t.tokenizerConfig));
  return dir;
}

test('serve -m DIR: a Hugging Face directory is served (digest over its files), named after the directory', async () => {
  const dir = hfModelDir('tiny-qwen2-hf');
  const s = await serveChild(['-m', dir, '-c', '128', '--cache-ram', '8']);
  try {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
    assert.equal((await client.models.list()).data[0]!.id, 'tiny-qwen2-hf');
    const r = await client.completions.create({
      model: 'tiny-qwen2-hf',
      prompt: 'ABC',
      max_tokens: 3,
      temperature: 0,
      ignore_eos: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(r.usage!.completion_tokens, 3);
    assert.equal(r.usage!.prompt_tokens, 3);
  } finally {
    await s.close();
  }
});

test('serve -m on a missing path: one line, exit 1', () => {
  const missing = join(tmp, 'no', 'such-model');
  const r = spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), 'serve', '-m', missing, '--port', '0'], { encoding: 'utf8', timeout: 60_000 });
  const lines = r.stderr
    .trim()
    .split('\n')
    .filter((l) => !l.startsWith('kvpack serve: http'));
  assert.equal(r.status, 1, r.stderr);
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /^kvpack: .*no such file/i);
});

test('web --models with a relative path: listed and served, no stack trace', async () => {
  hfModelDir('tiny-for-web');
  const child = spawn(process.execPath, [fromRoot('bin', 'kvpack.js'), 'web', '--port', '0', '--models', 'models'], {
    cwd: tmp,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    let err = '';
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /kvpack web: (http:\/\/\S+\/)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.on('exit', (code) => reject(new Error(`kvpack web exited ${code}: ${err}`)));
    });
    const list = (await (await fetch(`${url}models.json`)).json()) as { name: string }[];
    assert.ok(
      list.some((m) => m.name === 'tiny-for-web'),
      JSON.stringify(list),
    );
    assert.equal((await fetch(`${url}models/tiny-for-web/config.json`)).status, 200);
  } finally {
    child.kill('SIGTERM');
  }
});
