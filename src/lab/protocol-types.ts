// The Protocol contract: frozen JSON in, a run directory out, an auditor that recomputes it from the files.
import type { CheckList } from './checks.js';

export interface RunOptions {
  /** Called as work completes (for progress bars). */
  readonly progress?: (done: number, total: number) => void;
  /**
   * Test hook only: silently store quantized regions as f32, to prove the negative controls fire.
   * Never set by the CLI.
   */
  readonly sabotageDisableQuantization?: boolean;
  /** Test hooks only: the other sabotages the model protocols' controls must catch (model-runs.ts). */
  readonly sabotage?: { readonly corruptRead?: boolean; readonly wrongAnchorLayers?: boolean; readonly dropAnchors?: boolean };
  /** bit-allocation: a capture file (src/lab/capture.ts) whose layers are probed next to the synthetic ones. */
  readonly capture?: string;
  /** Model protocols: the model file (.gguf or llama2.c .bin) the engine runs. */
  readonly model?: string;
}

export interface RunResult {
  readonly dir: string;
  /** Every control and self-check of the run passed. */
  readonly pass: boolean;
  /** The run's own checks (controls, byte formulas). */
  readonly checks: CheckList;
  /** Markdown lines: the headline table. */
  readonly headline: string[];
}

export interface Protocol {
  readonly name: string;
  readonly title: string;
  /** Frozen JSON, relative to the repo root. */
  readonly file: string;
  /** Model protocols need `-m MODEL` and the engine; synthetic ones run anywhere. */
  readonly needsModel: boolean;
  /** Validates parsed JSON; throws FileFormatError naming the bad field. */
  parse(json: unknown): unknown;
  run(spec: unknown, protocolBytes: Uint8Array, out: string, opts?: RunOptions): RunResult;
  /** Adds protocol-specific checks (the generic manifest checks are run by the caller). */
  audit(dir: string, spec: unknown, checks: CheckList): void;
}
