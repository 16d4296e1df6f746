// Bench entry points declare their flags: --help prints usage and exits 0, an unknown flag or a bad value is
// one line on stderr and exit 2, all before any measurement starts (a short timeout turns a run into a failure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { checkArgs, usage, type OptSpecs } from '../bench/harness.js';
import { fromRoot } from './paths.js';

/** Entry points that read --threads, and the others (every script that parses flags with declareOptions). */
const WITH_THREADS = ['engine', 'decode-profile', 'prefill-profile', 'prefill-ceiling', 'thread-scaling', 'relaxed-ab', 'serve-peer', 'browser'];
const OTHERS = ['matmul-ab', 'matmul', 'attention-ab', 'run', 'store', 'load', 'load-probe', 'serve-batching', 'prefix-chunks', 'native-llama'];

function bench(name: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [fromRoot('dist-test', 'bench', `${name}.js`), ...args], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.signal, null, `${name} ${args.join(' ')}: killed by ${r.signal} (did it start a run?)`);
  return r;
}

test('bench flags: every bench that reads flags through the harness declares them and is spawned above', () => {
  const readers = readdirSync(fromRoot('bench'))
    .filter((f) => f.endsWith('.ts') && /import\s*\{[^}]*\b(option|flag)\b[^}]*\}\s*from\s*'\.\/harness\.js'/.test(readFileSync(fromRoot('bench', f), 'utf8')))
    .map((f) => f.slice(0, -3));
  const undeclared = readers.filter((n) => !readFileSync(fromRoot('bench', `${n}.ts`), 'utf8').includes('declareOptions('));
  assert.deepEqual(undeclared, [], 'benches reading flags without declareOptions');
  assert.deepEqual(
    readers.filter((n) => ![...WITH_THREADS, ...OTHERS].includes(n)),
    [],
    'benches this test does not spawn',
  );
});

for (const name of [...WITH_THREADS, ...OTHERS]) {
  test(`bench ${name}: --help prints usage and exits 0; an unknown flag exits 2 in one line naming it`, () => {
    const h = bench(name, '--help');
    assert.equal(h.status, 0, h.stderr);
    assert.match(h.stdout, /^usage: /);
    assert.match(h.stdout, /--help/);
    const u = bench(name, '--no-such-flag');
    assert.equal(u.status, 2, u.stdout);
    assert.equal(u.stderr.trimEnd().split('\n').length, 1, u.stderr);
    assert.match(u.stderr, /unknown flag --no-such-flag/);
  });
}

for (const name of WITH_THREADS) {
  test(`bench ${name}: --threads abc exits 2 in one line`, () => {
    const r = bench(name, '--threads', 'abc');
    assert.equal(r.status, 2, r.stdout);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /--threads expects an integer, got 'abc'/);
  });
}

const SPECS: OptSpecs = {
  '--threads': { kind: 'int', min: 1, help: 'threads', default: 2 },
  '--n': { kind: 'ints', min: 1, help: 'token counts' },
  '--budget': { kind: 'num', help: 'seconds' },
  '--choice': { kind: 'str', choices: ['a', 'b'], help: 'one of two' },
  '--kinds': { kind: 'strs', choices: ['x', 'y'], help: 'some of two' },
  '--quick': { kind: 'switch', help: 'quick' },
};

test('checkArgs: valid flags pass; each kind of bad value names its flag', () => {
  assert.equal(checkArgs(SPECS, ['--threads', '4', '--n', '1,64', '--budget', '0.5', '--choice', 'b', '--kinds', 'y,x', '--quick']), null);
  assert.equal(checkArgs(SPECS, []), null);
  assert.equal(checkArgs(SPECS, ['--quick', '-h']), 'help');
  assert.equal(checkArgs(SPECS, ['--threads', '0']), '--threads must be at least 1, got 0');
  assert.equal(checkArgs(SPECS, ['--threads', '1.5']), "--threads expects an integer, got '1.5'");
  assert.equal(checkArgs(SPECS, ['--n', '1,x']), "--n expects an integer, got 'x'");
  assert.equal(checkArgs(SPECS, ['--budget', 'fast']), "--budget expects a number, got 'fast'");
  assert.equal(checkArgs(SPECS, ['--choice', 'c']), "--choice: 'c' is not one of a, b");
  assert.equal(checkArgs(SPECS, ['--kinds', 'x,z']), "--kinds: 'z' is not one of x, y");
  assert.equal(checkArgs(SPECS, ['--threads']), '--threads expects a value');
  assert.equal(checkArgs(SPECS, ['--threads', '--quick']), '--threads expects a value');
  assert.equal(checkArgs(SPECS, ['--context', '8192']), 'unknown flag --context');
  assert.equal(checkArgs(SPECS, ['--quick', 'extra']), "unexpected argument 'extra'");
});

test('usage lists every declared flag with its default', () => {
  const u = usage('demo', 'a demo', SPECS);
  for (const name of Object.keys(SPECS)) assert.match(u, new RegExp(`^  ${name}\\b`, 'm'));
  assert.match(u, /--threads <int> +threads \(default 2\)/);
  assert.match(u, /--choice <str> +one of two \(one of a, b\)/);
});
