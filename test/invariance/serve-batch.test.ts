// Invariance of one request's answer to how its prompt is batched and threaded: greedy tokens and logprobs
// bit-identical across -ub 1, 7, 32, 128, 512, across --threads 1 and 2, and between `kvpack run` (its own
// prefill batches) and `kvpack serve`, for every scheme on every suite model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { serve } from '../server/harness.js';
import { fromRoot } from '../paths.js';
import { configureMatmul } from '../../src/kernels/matmul/config.js';
import { setThreads } from '../../src/kernels/runtime/pool.js';
import { schemePolicy } from '../../src/cache/schemes.js';
import { answer, ids, same, suiteModels, REGIONS } from './harness.js';

const UBS = [1, 7, 32, 128, 512];
const models = suiteModels('test/invariance/serve-batch.test.ts');

function threads(n: number): void {
  configureMatmul({ threads: n });
  setThreads(n);
}

for (const m of models) {
  test(`${m.name}: the same answer for -ub ${UBS.join(', ')} and --threads 1 and 2, ${m.schemes.map((x) => x.name).join(', ')}`, async () => {
    const prompt = ids(150, 1);
    for (const { name, policy } of m.schemes) {
      const answers = [];
      for (const ub of UBS) {
        const s = await serve({ modelPath: m.path, policy, prefillChunk: ub, parallel: 1, cacheRamBytes: 0 });
        try {
          threads(ub === 7 ? 2 : 1);
          answers.push(await answer(s, prompt));
          if (ub === 7) {
            threads(1);
            answers.push(await answer(s, prompt));
          }
        } finally {
          threads(1);
          await s.close();
        }
      }
      for (const a of answers.slice(1)) assert.deepEqual(same(a), same(answers[0]!), `${m.name} ${name}`);
    }
  });
}

test("kvpack run and kvpack serve give the same tokens for the same prompt (over 256 tokens: run's own prefill batches)", async () => {
  const prompt = ids(300, 2);
  for (const m of models.slice(0, 2)) {
    for (const kv of ['q8_0', 'q2k']) {
      const run = spawnSync(
        process.execPath,
        [
          fromRoot('bin', 'kvpack.js'),
          'run',
          '-m',
          m.path,
          '--tokens',
          prompt.join(','),
          '-n',
          '8',
          '--temp',
          '0',
          '--kv',
          kv,
          '--kv-window',
          String(REGIONS.window),
          '--sinks',
          String(REGIONS.sinks),
          '-c',
          '512',
          '--json',
          '-t',
          '1',
        ],
        { encoding: 'utf8' },
      );
      assert.equal(run.status, 0, run.stderr);
      const ran = JSON.parse(run.stdout) as { tokens: number[]; text: string };
      const s = await serve({ modelPath: m.path, policy: schemePolicy(kv, REGIONS), prefillChunk: 128, parallel: 1, cacheRamBytes: 0 });
      try {
        const served = await answer(s, prompt, { ignore_eos: false }, 8);
        assert.ok(ran.tokens.length > 0);
        assert.equal(served.text, ran.text, `${m.name} ${kv}`);
      } finally {
        await s.close();
      }
    }
  }
});
