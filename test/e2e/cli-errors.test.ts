// The CLI on paths a user gets wrong: one clear line naming the path, exit code 1, no stack trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromRoot } from '../paths.js';

const dir = mkdtempSync(join(tmpdir(), 'kvpack-cli-errors-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function kvpack(...args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [fromRoot('bin', 'kvpack.js'), ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

function oneLine(r: { status: number | null; stderr: string }, path: string, reason: RegExp, what: string): void {
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `${what}: stderr is one line, got:\n${r.stderr}`);
  assert.match(lines[0]!, /^kvpack: /, what);
  assert.ok(lines[0]!.includes(path), `${what}: names the path: ${lines[0]}`);
  assert.match(lines[0]!, reason, what);
  assert.equal(r.status, 1, `${what}: exit code`);
}

const notAModel = join(dir, 'notes.txt');
writeFileSync(notAModel, 'not a model, just some text\n'.repeat(20));
const missing = join(dir, 'no', 'such', 'file.gguf');
const cases: [string, string, RegExp][] = [
  ['missing', missing, /no such file/i],
  ['a directory', dir, /directory/i],
  ['not a model', notAModel, /not a GGUF|llama2\.c|checkpoint/i],
];

for (const [what, path, reason] of cases) {
  test(`kvpack run/chat/inspect/eval on ${what}: one line, exit 1`, () => {
    oneLine(kvpack('run', '-m', path, '-p', 'hi', '-n', '1'), path, reason, `run ${what}`);
    oneLine(kvpack('chat', '-m', path), path, reason, `chat ${what}`);
    oneLine(kvpack('inspect', path), path, reason, `inspect ${what}`);
    oneLine(kvpack('eval', '-m', path), path, reason, `eval ${what}`);
  });
}

test('kvpack run on a file without read permission: one line, exit 1', (t) => {
  if (process.getuid?.() === 0) return void t.skip('running as root: file permissions do not apply');
  const locked = join(dir, 'locked.gguf');
  writeFileSync(locked, 'x');
  chmodSync(locked, 0o000);
  oneLine(kvpack('run', '-m', locked, '-p', 'hi'), locked, /permission/i, 'run no permission');
});

test('bad flags stay usage errors: one line, exit 2', () => {
  const r = kvpack('run', '-m', notAModel, '-p', 'hi', '-ngl', '99');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /-ngl/);
});
