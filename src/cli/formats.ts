// `kvpack formats`: every registered format with its axis, block geometry and effective bits.
import type { Command } from 'commander';
import { formats } from '../formats/registry.js';
import { bitsPerValue } from '../formats/format.js';
import { table } from './args.js';

export function register(program: Command): void {
  program
    .command('formats')
    .description('list every packed format: id, axis, values/block, bytes/block, bits/element')
    .option('--json', 'machine-readable output')
    .action((opts: { json?: boolean }) => {
      const rows = [...formats.values()].map((f) => ({
        id: f.id,
        axis: f.axis,
        blockValues: f.blockValues,
        blockBytes: f.blockBytes,
        bitsPerValue: bitsPerValue(f),
        ggml: f.ggmlType !== undefined,
        description: f.description,
      }));
      if (opts.json) return void console.log(JSON.stringify(rows, null, 2));
      console.log(
        table([
          ['id', 'axis', 'values/block', 'bytes/block', 'bits/elem', 'ggml', 'description'],
          ...rows.map((r) => [r.id, r.axis, r.blockValues, r.blockBytes, r.bitsPerValue.toFixed(4), r.ggml ? 'yes' : '', r.description]),
        ]),
      );
    });
}
