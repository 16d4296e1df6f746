// The kvpack CLI entry: registers one subcommand per file; the only place the process exits.
import { Command, CommanderError } from 'commander';
import { ArgumentError, KvpackError, PolicyError, StoreUrlError, UnknownNameError } from '../errors.js';
import { normalizeArgv } from './args.js';
import * as formats from './formats.js';
import * as memory from './memory.js';
import * as run from './run.js';
import * as chat from './chat.js';
import * as inspect from './inspect.js';
import * as convert from './convert.js';
import * as lab from './lab.js';
import * as protocol from './protocol.js';
import * as evalCmd from './eval.js';
import * as probe from './probe.js';
import * as capture from './capture.js';
import * as web from './web.js';
import * as serve from './serve.js';
import * as study from './study.js';
import * as info from './info.js';

const commands: { register(program: Command): void }[] = [
  lab,
  study,
  protocol,
  run,
  chat,
  evalCmd,
  probe,
  capture,
  formats,
  memory,
  inspect,
  convert,
  serve,
  web,
  info,
];

export async function main(argv: string[]): Promise<void> {
  const program = new Command('kvpack')
    .description('compressed KV caches for LLM inference: formats, cache, engine and lab')
    .exitOverride()
    .showHelpAfterError();
  for (const c of commands) c.register(program);
  try {
    await program.parseAsync(normalizeArgv(argv), { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2);
    // One line, no stack: 2 for a bad invocation (flags, names, policies), 1 for what happened running it
    // (files missing or malformed, OS errors on a path the user named).
    if (e instanceof KvpackError) {
      console.error(`kvpack: ${e.message}`);
      process.exit(e instanceof ArgumentError || e instanceof PolicyError || e instanceof UnknownNameError || e instanceof StoreUrlError ? 2 : 1);
    }
    if (isSystemError(e)) {
      console.error(`kvpack: ${e.message}`);
      process.exit(1);
    }
    throw e;
  }
}

/** Node's errors from the OS (ENOENT, EACCES, ...): they carry a code and the failed syscall. */
function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  return e instanceof Error && typeof (e as NodeJS.ErrnoException).code === 'string' && typeof (e as NodeJS.ErrnoException).syscall === 'string';
}
