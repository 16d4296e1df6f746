// `kvpack protocol list | run NAME --out DIR | audit DIR`: frozen, audited lab protocols.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { protocols, plannedProtocols, runProtocol, runVariantFile, loadProtocol, type RunOptions } from '../lab/protocol.js';
import { auditRun } from '../lab/audit.js';
import { readManifest, PROTOCOL_COPY } from '../lab/manifest.js';
import { sha256 } from '../lab/hash.js';
import { Progress } from '../lab/progress.js';
import { table } from './args.js';

export function register(program: Command): void {
  const cmd = program.command('protocol').description('frozen lab protocols: list, run into a new directory, audit a run');

  cmd
    .command('list')
    .description('list the registered protocols and the planned model protocols')
    .action(() => {
      const rows: (string | number)[][] = [['name', 'kind', 'frozen file', 'title']];
      for (const p of protocols.values()) rows.push([p.name, p.needsModel ? 'model' : 'synthetic', p.file, p.title]);
      for (const p of plannedProtocols) rows.push([p.name, 'planned', '-', `${p.title} (needs ${p.needs})`]);
      console.log(table(rows));
    });

  cmd
    .command('run')
    .description('run a protocol from its frozen JSON, or a variant file of one, into a new directory (refuses an existing one)')
    .argument(
      '<name|file.json>',
      'protocol name (see `kvpack protocol list`), or a variant file: {"variantOf": "window-sweep", "set": {"prompts": {...}, ...}} replacing top-level fields of the frozen JSON (frozen by its hash into the run\'s manifest; the built-in file is never changed)',
    )
    .requiredOption('--out <dir>', 'output directory; must not exist')
    .option('--capture <file>', 'bit-allocation: also probe the layers of a capture file')
    .option('-m, --model <file>', 'model protocols (window-sweep, anchors, needles): the model file')
    .action((name: string, opts: { out: string; capture?: string; model?: string }) => {
      const bar = new Progress();
      let started = false;
      const run =
        name.endsWith('.json') || existsSync(name) ? (o: RunOptions) => runVariantFile(name, opts.out, o) : (o: RunOptions) => runProtocol(name, opts.out, o);
      const r = run({
        capture: opts.capture,
        model: opts.model,
        progress: (done, total) => {
          if (!started) bar.start(name, total);
          started = true;
          bar.update(name, done);
        },
      });
      bar.stop();
      console.log(r.headline.join('\n'));
      console.log('');
      console.log(r.checks.lines().join('\n'));
      console.log(`\nwrote ${r.dir}; check it with: kvpack protocol audit ${r.dir}`);
      if (!r.pass) process.exitCode = 1;
    });

  cmd
    .command('audit')
    .description('recompute a run from its saved files: one PASS/FAIL line per check, exit code 1 on FAIL')
    .argument('<dir>', 'a run directory written by `protocol run` or `lab`')
    .action((dir: string) => {
      const checks = auditRun(dir);
      console.log(checks.lines().join('\n'));
      noteFrozen(dir);
      if (!checks.pass) process.exitCode = 1;
    });
}

/** Informational: whether the run used this checkout's frozen protocol file (tiny test specs do not). */
function noteFrozen(dir: string): void {
  try {
    const name = readManifest(dir).protocol.name;
    if (!protocols.has(name) || !existsSync(join(dir, PROTOCOL_COPY))) return;
    const same = sha256(readFileSync(join(dir, PROTOCOL_COPY))) === sha256(loadProtocol(name).bytes);
    const variant = (JSON.parse(readFileSync(join(dir, PROTOCOL_COPY), 'utf8')) as { variant?: unknown }).variant !== undefined;
    console.log(`note: protocol.json ${same ? 'is identical to' : variant ? 'is a variant of' : 'differs from'} ${protocols.get(name)!.file} in this checkout`);
  } catch {
    // The audit lines above already report an unreadable manifest.
  }
}
