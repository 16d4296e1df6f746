// The write-behind queue: bounded in entries and bytes; when full the oldest entries go (the newest chunks
// are the ones the next request most likely shares).

export interface QueuedWrite {
  key: string;
  payload: Uint8Array;
}

export class WriteQueue {
  private items: QueuedWrite[] = [];
  private head = 0;
  private keys = new Set<string>();
  bytes = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
    private readonly onDrop: (w: QueuedWrite) => void,
  ) {}

  get length(): number {
    return this.items.length - this.head;
  }

  /** Queues a write (a key already queued is not queued twice); drops the oldest beyond the bounds. */
  push(w: QueuedWrite): void {
    if (this.keys.has(w.key)) return;
    if (w.payload.length > this.maxBytes) return this.onDrop(w);
    this.items.push(w);
    this.keys.add(w.key);
    this.bytes += w.payload.length;
    while (this.length > this.maxEntries || this.bytes > this.maxBytes) this.onDrop(this.shift()!);
  }

  /** Up to maxEntries writes of at most about maxBytes together (always at least one), oldest first. */
  take(maxEntries: number, maxBytes: number): QueuedWrite[] {
    const out: QueuedWrite[] = [];
    let bytes = 0;
    while (this.length > 0 && out.length < maxEntries && (out.length === 0 || bytes + this.items[this.head]!.payload.length <= maxBytes)) {
      const w = this.shift()!;
      bytes += w.payload.length;
      out.push(w);
    }
    return out;
  }

  private shift(): QueuedWrite | undefined {
    if (this.length === 0) return undefined;
    const w = this.items[this.head++]!;
    // Compact now and then so taken entries do not pile up at the front.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.keys.delete(w.key);
    this.bytes -= w.payload.length;
    return w;
  }
}
