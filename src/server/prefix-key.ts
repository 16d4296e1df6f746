// Prefix-cache keys: a hash chain over fixed token chunks (vLLM's block hashing). The chain's root binds the
// model file's digest, the cache policy and an optional per-request salt, so KV computed under one model,
// policy or tenant can never be found by a request under another, whatever its tokens.
import { createHash } from 'node:crypto';

/**
 * The chain root for one (model, policy, salt). `policy` is plain JSON: the cache policy, and whatever else
 * changes the KV a prefill writes (the server adds attention precision and prefill batch). Salt '' and no
 * salt are the same (public) key.
 */
export function prefixRoot(modelDigest: string, policy: unknown, chunkTokens: number, salt = ''): string {
  return createHash('sha256')
    .update(JSON.stringify({ model: modelDigest, policy, chunkTokens, salt }))
    .digest('hex');
}

/** h_i = sha256(h_{i-1} | tokens of chunk i as int32 LE) for each whole chunk of `tokens` (at most `maxChunks`). */
export function chunkHashes(root: string, tokens: readonly number[], chunkTokens: number, maxChunks = Infinity): string[] {
  const out: string[] = [];
  let prev = root;
  const n = Math.min(Math.floor(tokens.length / chunkTokens), maxChunks);
  const buf = Buffer.alloc(chunkTokens * 4);
  for (let c = 0; c < n; c++) {
    for (let i = 0; i < chunkTokens; i++) buf.writeInt32LE(tokens[c * chunkTokens + i]!, i * 4);
    prev = createHash('sha256').update(prev).update(buf).digest('hex');
    out.push(prev);
  }
  return out;
}
