// The cache file format's version, in one place for file.ts and its browser twin (which writes no files).

/**
 * Layout: "KVPK" | u32 version | u32 header length | header JSON (UTF-8) | payload | sha256 of all before.
 * Header `state`: each layer's LayerMeta; payload: each layer's LayerState arrays in arrayList order (sinks
 * K/V, window ring K/V, anchors K/V, staging, then the K chunks held, then the V chunks held; layer-state.ts).
 * Version 2 adds sliding-window eviction (`evicted`, per-stream `dropped` leading chunks, absent from the
 * payload); version 1 files read as "nothing dropped". Version 3 packs
 * adjacent heads when a block is longer than a head (head-packing.ts); older files of such caches padded
 * each head and are refused. Version 4 sizes the window ring for batch-invariant reads (exact-from.ts: the
 * window plus an open channel group) and keeps the rows the next queries read; older files hold a ring of
 * W rows filled by the old batch-dependent rule and are refused (re-create the cache).
 */
export const CACHE_FILE_VERSION = 4;
