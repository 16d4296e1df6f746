// Messages between the page (app.ts) and its engine Worker (engine-worker.ts).
import type { CacheBytes } from '../cache/kvcache.js';
import type { PickedFile, ServedFile } from '../hf/web-files.js';
import type { PageSettings } from './settings.js';

/**
 * Where the engine reads a model: a GGUF at a URL the server answers with Range, or a GGUF File the user
 * picked; a Hugging Face directory the server lists (`dir` is its URL, ending in '/'), or one the user
 * picked (a folder, or the directory's files together).
 */
export type ModelRef =
  | { url: string; name: string }
  | { file: File; name: string }
  | { dir: string; files: ServedFile[]; name: string }
  | { picked: PickedFile[]; name: string };

export type EngineRequest =
  | ({ type: 'run'; source: ModelRef } & Omit<PageSettings, 'model' | 'autorun'>)
  /** The parity gate's small grid in this browser (every registered kernel against the reference). */
  | { type: 'check' };

/** Cache readout after a token: bytes per region, what f16 would take, and the values held. */
export interface CacheReadout {
  bytes: CacheBytes;
  /** Every position in f16 K and V (kvBytes with an all-f16 policy). */
  f16Bytes: number;
  positions: number;
  /** K and V values held: positions x layers x kv heads x head dim x 2. */
  values: number;
}

export interface ModelInfo {
  name: string;
  arch: string;
  layers: number;
  kvHeads: number;
  headDim: number;
  nCtxTrain: number;
  vocab: number;
  weightBytes: number;
  loadMs: number;
}

export type EngineEvent =
  | { type: 'status'; text: string }
  | { type: 'threads'; threads: number; wanted: number; note: string }
  | { type: 'loaded'; info: ModelInfo }
  | { type: 'arm'; arm: number; scheme: string; promptTokens: number }
  | ({ type: 'token'; arm: number; index: number; id: number; text: string; tps: number } & CacheReadout)
  | ({ type: 'end'; arm: number; scheme: string; ids: number[]; text: string; stopReason: string; prefillTps: number; decodeTps: number } & CacheReadout)
  /** After every arm: the first generated index where compare mode's arms differ (-1: none), and pool use. */
  | { type: 'done'; divergence: number | null; pool: { workers: number; jobs: number; calls: number } }
  | { type: 'check'; passed: number; failed: number; fallback: number; failures: string[] }
  | { type: 'error'; message: string };
