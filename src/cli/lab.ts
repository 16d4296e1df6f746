// `kvpack lab [-m MODEL] [--out DIR]`: every synthetic protocol, a report (md + html), a manifest, a summary.
import type { Command } from 'commander';
import { runLab } from '../lab/lab.js';
import { auditRun } from '../lab/audit.js';
import { Progress } from '../lab/progress.js';

export function register(program: Command): void {
  program
    .command('lab')
    .description('run the synthetic lab protocols (and with -m MODEL the model ones) into a new report directory')
    .option('-m, --model <file>', 'model file (.gguf or llama2.c .bin) for the model protocols (window-sweep, anchors, needles)')
    .option('--out <dir>', 'output directory; must not exist (default: a new lab-out/<timestamp>)')
    .option('--no-audit', 'skip re-auditing the finished directory')
    .action((opts: { model?: string; out?: string; audit: boolean }) => {
      const bar = new Progress();
      const t0 = Date.now();
      const r = runLab({ out: opts.out, model: opts.model, onStart: (n, total) => bar.start(n, total), onProgress: (n, done) => bar.update(n, done) });
      bar.stop();
      for (const { name, result } of r.runs) {
        console.log(`\n## ${name} (${result.pass ? 'controls PASS' : 'controls FAIL'})\n`);
        console.log(result.headline.join('\n'));
      }
      console.log('');
      for (const s of r.skipped) console.log(`skipped ${s.name}: ${s.reason}`);
      if (!opts.model) console.log('model protocols need -m MODEL');
      console.log(`\nwrote ${r.dir}/report.md, report.html and manifest.json in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      let pass = r.pass;
      if (opts.audit) {
        const a = auditRun(r.dir);
        console.log(`audit: ${a.lines().at(-1)}`);
        for (const c of a.checks.filter((c) => !c.pass)) console.log(`  FAIL ${c.name} (${c.detail})`);
        pass &&= a.pass;
      }
      if (!pass) process.exitCode = 1;
    });
}
