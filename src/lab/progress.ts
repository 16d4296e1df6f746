// Progress bars (cli-progress, CommonJS without bundled types): a typed wrapper so callers stay strict.
import { createRequire } from 'node:module';

interface Bar {
  update(value: number, payload?: Record<string, unknown>): void;
  stop(): void;
}
interface MultiBar {
  create(total: number, start: number, payload?: Record<string, unknown>): Bar;
  stop(): void;
}
interface CliProgress {
  MultiBar: new (opts: Record<string, unknown>, preset?: unknown) => MultiBar;
  Presets: { shades_classic: unknown };
}

const cliProgress = createRequire(import.meta.url)('cli-progress') as CliProgress;

/** One bar per named task on stderr; silent when stderr is not a terminal (CI logs stay clean). */
export class Progress {
  private readonly multi: MultiBar | null;
  private readonly bars = new Map<string, Bar>();
  constructor(enabled = process.stderr.isTTY === true) {
    this.multi = enabled
      ? new cliProgress.MultiBar(
          { format: ' {name} |{bar}| {value}/{total}', hideCursor: true, clearOnComplete: false, stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
      : null;
  }
  start(name: string, total: number): void {
    if (this.multi && !this.bars.has(name)) this.bars.set(name, this.multi.create(total, 0, { name: name.padEnd(16) }));
  }
  update(name: string, done: number): void {
    this.bars.get(name)?.update(done);
  }
  stop(): void {
    this.multi?.stop();
  }
}
