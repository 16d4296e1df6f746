// `kvpack web`: serves the browser page (the engine and cache running in the tab) and a models directory.
import type { Command } from 'commander';
import { startWebServer } from '../web/server.js';
import { intArg } from './args.js';

interface WebOpts {
  port: number;
  host: string;
  models?: string;
  isolation: boolean;
}

export function register(program: Command): void {
  program
    .command('web')
    .description('serve the kvpack page: GGUF and Hugging Face models run in the browser over a compressed KV cache')
    .option('--port <n>', 'TCP port (0 = any free one)', intArg('--port', 0, 65535), 8080)
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--models <dir>', 'directory whose .gguf files and Hugging Face directories the page lists and loads (served with HTTP Range)')
    .option('--no-isolation', 'leave out the COOP/COEP headers (the page then runs on one thread)')
    .action(async (o: WebOpts) => {
      const server = await startWebServer(o);
      console.log(
        `kvpack web: ${server.url}${o.models ? ` (models from ${o.models})` : ' (no --models: pick a local GGUF or Hugging Face folder in the page)'}`,
      );
      console.log('Ctrl-C stops the server.');
    });
}
