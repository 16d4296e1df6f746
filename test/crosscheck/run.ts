// `npm run crosscheck`: every architecture x weight type x cache type (f16 with and without flash
// attention, q8_0, q4_0) on longer decodes, plus stories260K when present. One PASS/FAIL line per case.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { caseName, formatResult, runCase, type CaseSpec } from './cases.js';
import { LlamaCpp } from './llamacpp.js';
import { CROSS_ARCHS } from './models.js';
import { storiesGreedy, storiesPath } from './stories.js';

/** Prompt longer than gemma3's window (16) so local layers mask; 160 decode steps cross it many times. */
const PROMPT = 48;
const STEPS = 160;
const STORIES_STEPS = 200;

const CACHES: Pick<CaseSpec, 'cache' | 'flashAttention'>[] = [
  { cache: 'f16', flashAttention: false },
  { cache: 'f16', flashAttention: true },
  // llama.cpp refuses a quantized V cache without flash attention.
  { cache: 'q8_0', flashAttention: true },
  { cache: 'q4_0', flashAttention: true },
];

async function main(): Promise<number> {
  const lc = await LlamaCpp.open();
  if (typeof lc === 'string') {
    console.log(`SKIP crosscheck: ${lc}`);
    return 0;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-crosscheck-'));
  let failed = 0;
  try {
    for (const arch of CROSS_ARCHS) {
      for (const weightType of ['f32', 'f16'] as const) {
        for (const c of CACHES) {
          const spec: CaseSpec = { arch, weightType, ...c, promptLength: PROMPT, steps: STEPS };
          try {
            const r = await runCase(lc, join(dir, `${arch}-${weightType}-${c.cache}-${c.flashAttention}.gguf`), spec);
            if (r.failures.length) failed++;
            console.log(formatResult(r));
          } catch (e) {
            failed++;
            console.log(`FAIL ${caseName(spec)}: ${(e as Error).message}`);
          }
        }
      }
    }
    const stories = storiesPath();
    if ('skip' in stories) console.log(`SKIP stories260K: ${stories.skip}`);
    else {
      for (const fa of [false, true]) {
        const r = await storiesGreedy(lc, stories.path, STORIES_STEPS, fa);
        if (r.failures.length) failed++;
        console.log(`stories260K from BOS: ${formatResult(r)}`);
      }
    }
  } finally {
    await lc.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(failed ? `${failed} case(s) failed` : 'all cases passed');
  return failed ? 1 : 0;
}

process.exitCode = await main();
