// Where a prefill may resume from restored KV and still compute exactly what a cold prefill computes.
//
// A prefill batch [s, e) appends its K/V, then every query of the batch reads positions before e - W from
// the packed bulk and [e - W, e) from the exact window. So a position's KV depends on where its batch ended,
// not only on its tokens: resuming anywhere would change what the first batches read (and, through the
// matmuls' row pairing, even the float order). A cold prefill's batches are [0, U), [U, 2U), ... A resume at r
// reproduces it bit for bit when
//   - r is a multiple of U (the same batches follow) and of the chunk size C (whole chunks, whole channel groups),
//   - the first batch's window lies at or after r (U >= W, and at least W prompt positions left), so nothing
//     exact before r is read (restored KV has no window: imported chunks never carry one),
//   - every position before r holds a cold prefill's KV ("exact" positions: computed in full batches on those
//     boundaries, by this same computation; see Slot.exact).
// Positions computed by decode steps or in a prompt's last, partial batch are not exact for a longer prompt.
// Overlay window mode only: in residual mode a rewind into the bulk re-stages channel groups from their
// decoded values (lossy), so restored and cold bulks can differ.

export interface ResumeRule {
  /** Cache chunk tokens C. */
  chunkTokens: number;
  /** Prefill batch U (--ubatch-size). */
  prefillChunk: number;
  /** The widest exact window W of any layer. */
  window: number;
  /** Every layer in overlay window mode (the bulk holds every position). */
  overlay: boolean;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** False when no resume point exists (U < W: every batch reads exact rows from before its start; residual mode). */
export function exactResumePossible(r: ResumeRule): boolean {
  return r.overlay && r.prefillChunk >= r.window;
}

/**
 * The deepest exact resume point for a prompt of `promptLength` tokens whose first `exactTokens` positions
 * are available with a cold prefill's KV: 0 when there is none.
 */
export function exactResumePoint(r: ResumeRule, exactTokens: number, promptLength: number): number {
  if (!exactResumePossible(r)) return 0;
  const step = (r.chunkTokens / gcd(r.chunkTokens, r.prefillChunk)) * r.prefillChunk;
  // At least one token is fed (fresh logits), and at least the window is computed here.
  const max = Math.min(exactTokens, promptLength - Math.max(r.window, 1));
  return max < step ? 0 : Math.floor(max / step) * step;
}

/** True when resuming at `keep` with `exactTokens` exact positions is an exact resume (or a cold start). */
export function isExactResume(r: ResumeRule, keep: number, exactTokens: number, promptLength: number): boolean {
  return keep === 0 || exactResumePoint(r, Math.min(keep, exactTokens), promptLength) === keep;
}
