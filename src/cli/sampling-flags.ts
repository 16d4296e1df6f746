// The sampling flags `run` and `chat` share (llama.cpp's names and defaults) and the sampler options they give.
import type { Command } from 'commander';
import type { SamplerOptions } from '../model/sampler.js';
import { intArg, numArg } from './args.js';

export interface SamplingFlags {
  temp: number;
  seed: number;
  topK: number;
  topP: number;
  minP: number;
  repeatPenalty: number;
  /** Stop strings (--stop, repeatable): the text ends before the first one generated. */
  stop: string[];
}

export function addSamplingFlags(cmd: Command): Command {
  return cmd
    .option('--temp <t>', 'temperature (0 = greedy)', numArg('--temp', 0, 100), 0.8)
    .option('-s, --seed <n>', 'sampling seed', intArg('--seed', 0, 2 ** 32 - 1), 0)
    .option('--top-k <n>', 'top-k (0 = off)', intArg('--top-k', 0), 40)
    .option('--top-p <p>', 'top-p (1 = off)', numArg('--top-p', 0, 1), 0.95)
    .option('--min-p <p>', 'min-p (0 = off)', numArg('--min-p', 0, 1), 0.05)
    .option('--repeat-penalty <x>', 'repetition penalty (1 = off)', numArg('--repeat-penalty', 0.01, 100), 1)
    .option('--stop <text>', 'stop before this text (repeatable); nothing of it is printed', (v: string, prev: string[]) => [...prev, v], [] as string[]);
}

/** The sampler options the flags describe. */
export function samplerFromFlags(o: SamplingFlags): SamplerOptions {
  return { temperature: o.temp, topK: o.topK, topP: o.topP, minP: o.minP, repeatPenalty: o.repeatPenalty, seed: o.seed };
}
