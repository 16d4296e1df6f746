// `npm run gate`: the parity gate from the command line (`--full` for the full grid, `--formats a,b`).
import { FULL_GRID, SMALL_GRID, runGate } from '../../src/parity/gate.js';

const full = process.argv.includes('--full');
const only = process.argv.indexOf('--formats');
const grid = full ? FULL_GRID : SMALL_GRID;
const r = runGate(only >= 0 ? { ...grid, formats: process.argv[only + 1]!.split(',') } : grid);
if (r.failed > 0) {
  console.log('failures:');
  for (const x of r.failures) console.log(`  ${x}`);
}
process.exitCode = r.failed > 0 ? 1 : 0;
