// The order JS `Array.prototype.sort` gives a block when its comparator is not a total order (a NaN
// compares as "equal" to everything), for the tern/int2s encoders' NaN blocks. Without NaN any correct
// sort matches the reference; with one, its bytes depend on V8's algorithm, mirrored here: for n < 64
// TimSort is CountAndMakeRun then BinaryInsertionSort (v8/third_party/v8/builtins/array-sort.tq).
// The work array (indices < 32) lives in two i8x16 registers: encoders have no scratch memory.

const IOTA_LO = i8x16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
const IOTA_HI = i8x16(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);

/** Byte q (0..31) of the 32 bytes lo | hi. */
@inline export function byteAt(lo: v128, hi: v128, q: i32): i32 {
  return i8x16.extract_lane_u(i8x16.swizzle(q < 16 ? lo : hi, i8x16.splat(<i8>(q & 15))), 0);
}

/**
 * comparator(i, j) < 0 for values i, j at p (f32): tern sorts |x| by `(p, q) => q - p` (NaN -> 0: not
 * before); int2s sorts indices by `|x_b| - |x_a| || a - b` (a zero or NaN difference falls to the index).
 */
@inline function before(p: usize, i: i32, j: i32, ties: bool): bool {
  const a = abs<f32>(load<f32>(p + (<usize>i << 2)));
  const b = abs<f32>(load<f32>(p + (<usize>j << 2)));
  return a > b || (ties && !(b > a) && i < j);
}

/**
 * The permutation of indices 0..n-1 (4 <= n <= 32) that V8's sort leaves, as bytes 0..15 (upper: 16..31).
 * `order < 0` is `before`; `order >= 0` is its negation, which a NaN comparison also takes.
 */
export function jsSortOrder(p: usize, n: i32, ties: bool, upper: bool): v128 {
  let lo = IOTA_LO;
  let hi = IOTA_HI;
  // CountAndMakeRun(0, n): the leading run, strictly descending in sort order or not; the array is still
  // the identity here, so a[idx] = idx.
  const desc = before(p, 1, 0, ties);
  let run = 2;
  while (run < n && before(p, run, run - 1, ties) == desc) run++;
  if (desc) {
    // Reverse a[0..run): a[q] = run - 1 - q.
    const last = i8x16.splat(<i8>(run - 1));
    const n8 = i8x16.splat(<i8>run);
    lo = v128.bitselect(i8x16.sub(last, IOTA_LO), IOTA_LO, i8x16.lt_u(IOTA_LO, n8));
    hi = v128.bitselect(i8x16.sub(last, IOTA_HI), IOTA_HI, i8x16.lt_u(IOTA_HI, n8));
  }
  // BinaryInsertionSort(0, run, n): each pivot goes after every element it is not before.
  for (let start = run; start < n; start++) {
    const pivot = byteAt(lo, hi, start);
    let left = 0;
    let right = start;
    while (left < right) {
      const mid = left + ((right - left) >> 1);
      if (before(p, pivot, byteAt(lo, hi, mid), ties)) right = mid;
      else left = mid + 1;
    }
    // a[left+1..start] = a[left..start-1], a[left] = pivot: the bytes shifted up by one, selected by position.
    const l8 = i8x16.splat(<i8>left);
    const s8 = i8x16.splat(<i8>start);
    const pv = i8x16.splat(<i8>pivot);
    const upLo = i8x16.shuffle(i8x16.splat(0), lo, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30);
    const upHi = i8x16.shuffle(lo, hi, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30);
    const mLo = v128.and(i8x16.gt_u(IOTA_LO, l8), i8x16.le_u(IOTA_LO, s8));
    const mHi = v128.and(i8x16.gt_u(IOTA_HI, l8), i8x16.le_u(IOTA_HI, s8));
    lo = v128.bitselect(pv, v128.bitselect(upLo, lo, mLo), i8x16.eq(IOTA_LO, l8));
    hi = v128.bitselect(pv, v128.bitselect(upHi, hi, mHi), i8x16.eq(IOTA_HI, l8));
  }
  return upper ? hi : lo;
}
