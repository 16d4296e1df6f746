// One spelling and one set of defaults for the exact-region flags across every command that builds a cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { normalizeArgv } from './args.js';
import { ArgumentError } from '../errors.js';
import * as run from './run.js';
import * as chat from './chat.js';
import * as evalCmd from './eval.js';
import * as memory from './memory.js';

const CACHE_COMMANDS = { run, chat, eval: evalCmd, memory };

test('every command that builds a cache spells the region flags --kv-window / --sinks, with no default of its own', () => {
  for (const [name, mod] of Object.entries(CACHE_COMMANDS)) {
    const program = new Command();
    mod.register(program);
    const cmd = program.commands.find((c) => c.name() === name)!;
    for (const flag of ['--kv-window', '--sinks']) {
      const o = cmd.options.find((x) => x.long === flag);
      assert.ok(o, `${name} has no ${flag}`);
      assert.equal(o.defaultValue, undefined, `${name} ${flag} has its own default`);
    }
    assert.equal(
      cmd.options.find((x) => x.long === '--window'),
      undefined,
      `${name} spells --window`,
    );
  }
});

test('--window is an alias of --kv-window; -ngl is a clear error, not a flag that does not exist', () => {
  assert.deepEqual(normalizeArgv(['memory', '--window', '16', '--window=8']), ['memory', '--kv-window', '16', '--kv-window=8']);
  assert.deepEqual(normalizeArgv(['memory', '--window-mode', 'residual']), ['memory', '--window-mode', 'residual']);
  for (const a of ['-ngl', '--n-gpu-layers', '--n-gpu-layers=99']) {
    assert.throws(
      () => normalizeArgv(['run', '-m', 'x', a, '99']),
      (e: unknown) => e instanceof ArgumentError && /GPU/.test(e.message) && e.message.includes(a.split('=')[0]!),
    );
  }
});
