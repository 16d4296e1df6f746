// The kvpack CLI entry: registers one subcommand per file; the only place the process exits.
import { Command, CommanderError } from 'commander';
import { KvpackError } from '../errors.js';
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

const commands: { register(program: Command): void }[] = [lab, protocol, run, chat, evalCmd, probe, capture, formats, memory, inspect, convert, serve, web];

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
    if (e instanceof KvpackError) {
      console.error(`kvpack: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
}
