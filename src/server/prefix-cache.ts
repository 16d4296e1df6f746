// The compressed prefix cache: frozen forks of slots' packed caches (a finished slot, and snapshots taken
// during prefills at the points a later prompt may resume from), found by the hash chain of their token
// chunks (prefix-key.ts), bounded by bytes, evicted least recently used, never while pinned by a slot that is
// restoring from it. Bytes are the packed bytes the entries hold (chunks shared between entries count once,
// so a snapshot costs its exact rows). A hit resumes where the entry's cache is resumable (resume-point.ts).
// A remote tier (remote-prefix.ts) adds entries built from chunks and resume rows other instances computed.
import type { KvCache } from '../cache/kvcache.js';
import { chunkHashes } from './prefix-key.js';
import { commonPrefix } from './cache-reuse.js';
import { deepestResumable, type ResumeRule } from './resume-point.js';

export interface PrefixEntry {
  /** Chain root (model, policy, salt). */
  readonly key: string;
  /** Chain hashes of the whole chunks of `tokens`. */
  readonly hashes: readonly string[];
  /** The tokens whose KV the cache holds (any length of at least one chunk). */
  readonly tokens: readonly number[];
  readonly cache: KvCache;
  /** Built from chunks fetched from the remote tier (for /metrics). */
  readonly remote: boolean;
  /** Bytes outside the shared bulk chunks (exact regions, staging), allocated per entry. */
  readonly ownBytes: number;
  /** Of those, bytes holding data (an entry's staging and rewound window hold none). */
  readonly ownPacked: number;
  pins: number;
  used: number;
}

export interface PrefixHit {
  entry: PrefixEntry;
  /** Tokens of the prompt the entry holds (at most the prompt length - 1: one token is always fed). */
  matched: number;
  /** Where a prefill restored from it resumes: the deepest resumable point <= matched (never 0 for a hit). */
  keep: number;
}

export interface PrefixLookup {
  /** The entry that lets the prompt resume deepest, or null. */
  hit: PrefixHit | null;
  /** The longest match of any entry, resumable or not: where a snapshot would serve the next such prompt. */
  matched: number;
}

export interface PrefixCacheOptions {
  budgetBytes: number;
  chunkTokens: number;
  /** Where an entry's cache resumes (default deepestResumable; tests swap in an unsafe rule). */
  resume?: ResumeRule;
}

export class PrefixCache {
  private readonly entries = new Set<PrefixEntry>();
  private readonly index = new Map<string, Set<PrefixEntry>>();
  /** How many entries hold each shared bulk chunk, and its size. */
  private readonly chunks = new Map<object, { refs: number; bytes: number }>();
  private chunkBytes = 0;
  private clock = 0;
  /** Positions served from entries and lookups that found nothing (for /metrics). */
  hitTokens = 0;
  misses = 0;

  readonly resumeAt: ResumeRule;

  constructor(readonly o: PrefixCacheOptions) {
    this.resumeAt = o.resume ?? deepestResumable;
  }

  get enabled(): boolean {
    return this.o.budgetBytes > 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes allocated for the entries (what the budget bounds): shared chunks once, plus each entry's exact regions. */
  get bytes(): number {
    let own = 0;
    for (const e of this.entries) own += e.ownBytes;
    return own + this.chunkBytes;
  }

  /** Bytes of K/V data the entries hold (bulk chunks counted whole, as allocated). */
  get packedBytes(): number {
    let own = 0;
    for (const e of this.entries) own += e.ownPacked;
    return own + this.chunkBytes;
  }

  /** Chain hashes of the chunks of `tokens` a hit may cover: at least one token must stay to be fed. */
  hashesFor(key: string, tokens: readonly number[]): string[] {
    return chunkHashes(key, tokens, this.o.chunkTokens, Math.floor((tokens.length - 1) / this.o.chunkTokens));
  }

  /**
   * The local entry under `key` whose tokens start `tokens` that lets the prompt resume deepest (ties: the
   * longer match, then the most recently used), and the longest match of any; hashes from hashesFor.
   */
  lookup(key: string, hashes: readonly string[], tokens: readonly number[]): PrefixLookup {
    let hit: PrefixHit | null = null;
    let matched = 0;
    const seen = new Set<PrefixEntry>();
    for (let d = hashes.length; d > 0; d--) {
      const set = this.index.get(hashes[d - 1]!);
      if (!set) continue;
      for (const e of set) {
        if (seen.has(e) || e.key !== key || !samePrefix(e.tokens, tokens, d * this.o.chunkTokens)) continue;
        seen.add(e);
        const m = commonPrefix(e.tokens, tokens, tokens.length - 1);
        matched = Math.max(matched, m);
        const keep = this.resumeAt(e.cache, m);
        if (keep > 0 && (!hit || keep > hit.keep || (keep === hit.keep && (m > hit.matched || (m === hit.matched && e.used > hit.entry.used)))))
          hit = { entry: e, matched: m, keep };
      }
    }
    return { hit, matched };
  }

  /** Pins an entry while a slot copies from it; unpin() when done. */
  pin(e: PrefixEntry): void {
    e.pins++;
    e.used = ++this.clock;
  }

  unpin(e: PrefixEntry): void {
    e.pins = Math.max(0, e.pins - 1);
    this.evict();
  }

  /**
   * Adds a frozen fork of `cache` holding its first n positions (tokens[0, n), at least one chunk). An entry
   * holding exactly these tokens is only touched. Callers pass n = cache.length: a fork rewound deeper keeps
   * no exact rows to resume from (lookups only resume where resumableAt holds, so it would serve nothing).
   */
  insert(key: string, tokens: readonly number[], n: number, cache: KvCache): void {
    const C = this.o.chunkTokens;
    if (!this.enabled || n < C || n > cache.length || n > tokens.length || !cache.canRewind(n)) return;
    const hashes = chunkHashes(key, tokens, C, Math.floor(n / C));
    for (const e of this.index.get(hashes[hashes.length - 1]!) ?? []) {
      if (e.key === key && e.tokens.length === n && samePrefix(e.tokens, tokens, n)) {
        e.used = ++this.clock;
        return;
      }
    }
    const fork = cache.fork();
    if (fork.length > n) fork.rewind(n);
    fork.dropDecodeStart();
    this.add(key, hashes, tokens.slice(0, n), fork, false, false);
  }

  /**
   * Takes `cache` (its positions are tokens[0, cache.length), whole chunks plus the resume rows at their end,
   * imported from the remote tier) as an entry, pinned (unpin() when done: beyond the budget it goes then).
   */
  adopt(key: string, hashes: string[], tokens: readonly number[], cache: KvCache): PrefixEntry {
    return this.add(key, hashes, tokens, cache, true, true)!;
  }

  private add(key: string, hashes: string[], tokens: readonly number[], cache: KvCache, remote: boolean, pinned: boolean): PrefixEntry | null {
    // Entries are only forked, saved and measured: frozen, their exact regions allocate only the rows they hold.
    cache.freeze();
    let shared = 0;
    const chunks = cache.heldChunks();
    for (const c of chunks) shared += c.bytes;
    const nb = cache.nbytes();
    const e: PrefixEntry = {
      key,
      hashes,
      tokens,
      cache,
      remote,
      ownBytes: nb.allocated - shared,
      ownPacked: nb.total - nb.bulk,
      pins: pinned ? 1 : 0,
      used: ++this.clock,
    };
    this.entries.add(e);
    for (const h of hashes) {
      let s = this.index.get(h);
      if (!s) this.index.set(h, (s = new Set()));
      s.add(e);
    }
    for (const c of chunks) {
      const r = this.chunks.get(c.chunk);
      if (r) r.refs++;
      else {
        this.chunks.set(c.chunk, { refs: 1, bytes: c.bytes });
        this.chunkBytes += c.bytes;
      }
    }
    this.evict();
    return this.entries.has(e) ? e : null;
  }

  /** Least recently used first, skipping pinned entries, until the bytes fit the budget. */
  private evict(): void {
    if (this.bytes <= this.o.budgetBytes) return;
    const order = [...this.entries].sort((a, b) => a.used - b.used);
    for (const e of order) {
      if (this.bytes <= this.o.budgetBytes) break;
      if (e.pins === 0) this.remove(e);
    }
  }

  private remove(e: PrefixEntry): void {
    this.entries.delete(e);
    for (const h of e.hashes) {
      const s = this.index.get(h);
      s?.delete(e);
      if (s?.size === 0) this.index.delete(h);
    }
    for (const c of e.cache.heldChunks()) {
      const r = this.chunks.get(c.chunk)!;
      if (--r.refs === 0) {
        this.chunks.delete(c.chunk);
        this.chunkBytes -= r.bytes;
      }
    }
    e.cache.dispose();
  }

  /** Frees every entry (server shutdown). */
  clear(): void {
    for (const e of [...this.entries]) this.remove(e);
  }
}

function samePrefix(a: readonly number[], b: readonly number[], n: number): boolean {
  if (a.length < n || b.length < n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
