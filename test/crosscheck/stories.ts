// stories260K.gguf (a real, trained model written by llama.cpp's converter): greedy tokens from BOS in
// both engines with an f16 cache.
import { existsSync } from 'node:fs';
import { loadModel } from '../../src/model/model.js';
import { fromRoot } from '../paths.js';
import { compareF16, type CaseResult } from './cases.js';
import type { LlamaCpp } from './llamacpp.js';

export const STORIES_GGUF = fromRoot('..', 'shared', 'models', 'stories260K.gguf');

/** The file's path, or why it cannot be used. */
export function storiesPath(): { path: string } | { skip: string } {
  return existsSync(STORIES_GGUF) ? { path: STORIES_GGUF } : { skip: `${STORIES_GGUF} not present` };
}

/**
 * A trained model's sharper distributions turn the same f16 rounding into larger KL than the random
 * models' (measured KL max 5.1e-5 with flash attention off, 4.1e-4 on; max rel 1.8e-3 / 5.8e-3).
 */
export const STORIES_TOL = {
  off: { maxRel: 5e-3, klMax: 2e-4 },
  on: { maxRel: 1e-2, klMax: 2e-3 },
} as const;

/** Greedy decode of `steps` tokens after BOS, judged like the f16 cases (see compareF16). */
export async function storiesGreedy(lc: LlamaCpp, path: string, steps: number, flashAttention = false): Promise<CaseResult> {
  const ours = loadModel(path);
  const theirs = await lc.loadModel(path);
  try {
    const prompt = [ours.bos];
    const ref = await lc.run(theirs, prompt, steps, { cache: 'f16', flashAttention });
    const spec = { arch: 'llama', weightType: 'f32', cache: 'f16', flashAttention, promptLength: 1, steps } as const;
    return { spec, ...compareF16(ref, ours, prompt, steps, STORIES_TOL[flashAttention ? 'on' : 'off']) };
  } finally {
    await theirs.dispose();
  }
}
