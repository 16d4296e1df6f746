// A slot: one KvCache of -c positions, the tokens it holds, the key they were computed under, and the task
// using it. Between tasks a slot keeps its cache, so the next request under the same key reuses it.
import type { KvCache } from '../cache/kvcache.js';
import type { PrefixEntry } from './prefix-cache.js';
import type { Task } from './task.js';

export class Slot {
  /** Token ids whose KV the cache holds, in position order. */
  tokens: number[] = [];
  /** Prefix key the cached tokens were computed under (null: empty or unknown). */
  key: string | null = null;
  /** Prompt length of the last task (where its decode anchors began). */
  decodeStart: number | undefined;
  task: Task | null = null;
  /** Prompt tokens still to prefill. */
  remaining: number[] = [];
  /** The prefix entry this task was restored from, pinned until the task ends. */
  entry: PrefixEntry | null = null;
  /**
   * Positions of the current prompt, ascending, at which the prefill stops to leave a resume point: a frozen
   * snapshot for the prefix cache (and, on chunk boundaries, chunks and resume rows for the remote tier).
   */
  marks: number[] = [];
  /** Last time a task started here (least recently used slots are given away first). */
  used = 0;

  constructor(
    readonly id: number,
    public cache: KvCache,
  ) {}

  get idle(): boolean {
    return this.task === null;
  }

  /** Replaces the cache (prefix restore, slot restore), freeing the old one. */
  replaceCache(c: KvCache, tokens: number[], key: string | null): void {
    this.cache.dispose();
    this.cache = c;
    this.tokens = tokens;
    this.key = key;
    this.decodeStart = undefined;
    this.marks = [];
  }

  erase(): void {
    this.cache.clear();
    this.tokens = [];
    this.key = null;
    this.decodeStart = undefined;
    this.marks = [];
  }
}
