// Runs the CLI from sources without a build: npx tsx scripts/dev-cli.ts <args>
import { main } from '../src/cli/main.js';
void main(process.argv.slice(2));
