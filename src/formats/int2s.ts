// int2s: seed 002's magnitude-sorted 2-bit groups. A block of 32 values is sorted by |x| descending and cut
// into groups of g, each with its own f16 scale, so outliers share one wide group and small values get
// fine scales. Seed 002 ignored the cost of saying which value is in which group; here it is stored and
// counted in blockBytes.
import { defineFormat, type KvFormat } from './format.js';
import { halfUp, halfValue, putHalf } from './scale16.js';
import { packCodes, codeAt } from './packbits.js';

const QK = 32;
const fr = Math.fround;

/*
 * Codes: a symmetric uniform 4-level grid {-s, -s/3, +s/3, +s} (code 0..3) with s = group absmax.
 * Chosen over sign + magnitude bit {+-s/2, +-s}: on 32-value rows with one 20x outlier its relative MSE is
 * 0.48 vs 1.24 (g=8) and 0.19 vs 0.50 (g=4); on Student-t(3) rows 0.16 vs 0.36 (g=8). {+-s/2, +-s} wins only
 * on pure Gaussian rows (0.033 vs 0.075, g=8), and the grid also has the smaller worst case (s/3 vs s/2).
 */
const LEVEL = [-1, -1 / 3, 1 / 3, 1].map(fr);

/** C(n, k) for n <= 32, exact in doubles. */
const BINOM: number[][] = (() => {
  const t: number[][] = [];
  for (let n = 0; n <= QK; n++) {
    t.push([]);
    for (let k = 0; k <= n; k++) t[n]![k] = k === 0 || k === n ? 1 : t[n - 1]![k - 1]! + t[n - 1]![k]!;
  }
  return t;
})();
const binom = (n: number, k: number): number => (k < 0 || k > n ? 0 : BINOM[n]![k]!);

/*
 * Group membership, stored exactly at the information bound. The decoder only needs the partition of the
 * 32 positions into 32/g sets of g (each set carries its own scale; which set holds the largest values is
 * not needed), so sets are numbered canonically: set k is the one holding the smallest position not in
 * sets 0..k-1. Set k then picks its other g-1 members among the m - 1 positions left after that one
 * (m = 32 - k*g): one of C(m-1, g-1) choices, a digit ranked in the combinatorial number system. Digits
 * are joined in mixed radix into chunks that stay below 2^53 (exact in doubles, and a u64 for kernels),
 * each chunk written as ceil(log2(product)) bits, low bits first. g=8: one 52-bit chunk, 7 bytes
 * (log2 of the partition count is 51.9, so 7 bytes is the minimum); g=4: 45 + 22 bits, 9 bytes (65.7).
 * A flat group index per value would cost 8 and 12 bytes.
 */
interface Membership {
  radix: number[];
  chunks: { first: number; count: number; bits: number }[];
  bytes: number;
}

function membershipPlan(g: number): Membership {
  const radix: number[] = [];
  for (let k = 0; k < QK / g; k++) radix.push(binom(QK - k * g - 1, g - 1));
  const chunks: Membership['chunks'] = [];
  let total = 0;
  for (let k = 0; k < radix.length; ) {
    let product = 1;
    let count = 0;
    while (k + count < radix.length && product * radix[k + count]! < 2 ** 53) product *= radix[k + count++]!;
    const bits = Math.ceil(Math.log2(product));
    chunks.push({ first: k, count, bits });
    total += bits;
    k += count;
  }
  return { radix, chunks, bytes: Math.ceil(total / 8) };
}

/** Writes `bits` low bits of v (an integer < 2^53) at bit offset pos, low bits first. */
function putBits(dst: Uint8Array, off: number, pos: number, bits: number, v: number): void {
  for (let b = 0; b < bits; b++, v = Math.floor(v / 2)) {
    if (v % 2) dst[off + ((pos + b) >> 3)]! |= 1 << ((pos + b) & 7);
  }
}

function getBits(src: Uint8Array, off: number, pos: number, bits: number): number {
  let v = 0;
  for (let b = bits - 1; b >= 0; b--) v = v * 2 + ((src[off + ((pos + b) >> 3)]! >> ((pos + b) & 7)) & 1);
  return v;
}

/** Canonical set index (0..32/g-1) of each of the 32 positions, read from the membership field. */
function readMembership(plan: Membership, g: number, src: Uint8Array, off: number): Uint8Array {
  const digits: number[] = [];
  let pos = 0;
  for (const c of plan.chunks) {
    let v = getBits(src, off, pos, c.bits);
    pos += c.bits;
    // `%` keeps every digit in range, so arbitrary bytes still decode to some valid partition.
    for (let i = 0; i < c.count; i++) {
      digits.push(v % plan.radix[c.first + i]!);
      v = Math.floor(v / plan.radix[c.first + i]!);
    }
  }
  const set = new Uint8Array(QK);
  let rest = Array.from({ length: QK }, (_, i) => i);
  digits.forEach((digit, k) => {
    const members = [rest[0]!];
    // Unrank a (g-1)-subset of rest[1..]: greedy, largest element first.
    let r = digit;
    for (let i = g - 1; i >= 1; i--) {
      let p = i - 1;
      while (binom(p + 1, i) <= r) p++;
      r -= binom(p, i);
      members.push(rest[1 + p]!);
    }
    for (const j of members) set[j] = k;
    rest = rest.filter((j) => !members.includes(j));
  });
  return set;
}

function writeMembership(plan: Membership, g: number, set: Uint8Array, dst: Uint8Array, off: number): void {
  const digits: number[] = [];
  let rest = Array.from({ length: QK }, (_, i) => i);
  for (let k = 0; k < QK / g; k++) {
    // rest[0] is in set k by the canonical numbering; rank the positions of the others within rest[1..].
    let digit = 0;
    let i = 1;
    for (let p = 0; p + 1 < rest.length; p++) if (set[rest[p + 1]!] === k) digit += binom(p, i++);
    digits.push(digit);
    rest = rest.filter((j) => set[j] !== k);
  }
  dst.fill(0, off, off + plan.bytes);
  let pos = 0;
  for (const c of plan.chunks) {
    let v = 0;
    for (let i = c.count - 1; i >= 0; i--) v = v * plan.radix[c.first + i]! + digits[c.first + i]!;
    putBits(dst, off, pos, c.bits, v);
    pos += c.bits;
  }
}

/** Canonical set of each position: sort by |x| desc (ties: lower index first), cut into runs of g, renumber. */
function partition(src: Float32Array, off: number, g: number): Uint8Array {
  const order = Array.from({ length: QK }, (_, i) => i);
  order.sort((a, b) => Math.abs(src[off + b]!) - Math.abs(src[off + a]!) || a - b);
  const run = new Uint8Array(QK);
  order.forEach((j, rank) => (run[j] = Math.floor(rank / g)));
  const label = new Map<number, number>();
  const set = new Uint8Array(QK);
  for (let j = 0; j < QK; j++) {
    if (!label.has(run[j]!)) label.set(run[j]!, label.size);
    set[j] = label.get(run[j]!)!;
  }
  return set;
}

function makeInt2s(g: 8 | 4): KvFormat {
  const sets = QK / g;
  const plan = membershipPlan(g);
  const dBytes = 2 * sets;
  const amax = (src: Float32Array, off: number) => {
    let a = 0;
    for (let j = 0; j < QK; j++) a = Math.max(a, Math.abs(src[off + j]!));
    return a;
  };
  return defineFormat({
    id: `int2s_g${g}`,
    description: `seed 002 magnitude-sorted 2-bit: 32 values, ${sets} sets of ${g} by |x| rank, f16 scale each, membership stored`,
    axis: 'token',
    blockValues: QK,
    blockBytes: dBytes + plan.bytes + 8,
    layout: [
      { name: 'd', bytes: dBytes, what: `${sets} f16 scales (set absmax, rounded up), in canonical set order` },
      { name: 'grp', bytes: plan.bytes, what: 'set membership: canonical partition, combinatorial rank (see int2s.ts)' },
      { name: 'qs', bytes: 8, what: '2-bit code of element j in byte j>>2 at bits 2*(j&3)' },
    ],
    rule:
      `sets = runs of ${g} in |x|-descending order (ties: lower index first), numbered by their lowest position; ` +
      'code = clamp(floor(1.5 * (x/s + 1) + 0.5), 0, 3) with s the set scale; x = fround(level[code] * s), ' +
      'level = -1, -1/3, +1/3, +1 (float32)',
    exact: false,
    errorBound(src, srcOff) {
      const a = amax(src, srcOff);
      const s = halfValue(halfUp(a));
      // Half a grid step of the widest set (s/3), plus the overshoot if the scale saturated.
      return s / 3 + Math.max(0, a - s) + 2 ** -22 * a;
    },
    encodeBlock(src, srcOff, dst, dstOff) {
      const set = partition(src, srcOff, g);
      const scale = new Float64Array(sets);
      for (let j = 0; j < QK; j++) scale[set[j]!] = Math.max(scale[set[j]!]!, Math.abs(src[srcOff + j]!));
      for (let k = 0; k < sets; k++) scale[k] = putHalf(dst, dstOff + 2 * k, halfUp(scale[k]!));
      writeMembership(plan, g, set, dst, dstOff + dBytes);
      const codes = new Uint8Array(QK);
      for (let j = 0; j < QK; j++) {
        const s = scale[set[j]!]!;
        const u = s ? src[srcOff + j]! / s : 0;
        codes[j] = Math.max(0, Math.min(3, Math.floor(1.5 * (u + 1) + 0.5)));
      }
      packCodes(codes, QK, 2, dst, dstOff + dBytes + plan.bytes);
    },
    decodeBlock(src, srcOff, dst, dstOff) {
      const set = readMembership(plan, g, src, srcOff + dBytes);
      const qs = srcOff + dBytes + plan.bytes;
      for (let j = 0; j < QK; j++) {
        const s = halfValue(src[srcOff + 2 * set[j]!]! | (src[srcOff + 2 * set[j]! + 1]! << 8));
        dst[dstOff + j] = fr(LEVEL[codeAt(src, qs, j, 2)]! * s);
      }
    },
  });
}

export const int2s_g8 = makeInt2s(8);
export const int2s_g4 = makeInt2s(4);

/** For tests: the canonical set index of each position as stored in a block's membership field. */
export function int2sSets(g: 8 | 4, block: Uint8Array, off = 0): Uint8Array {
  return readMembership(membershipPlan(g), g, block, off + (2 * QK) / g);
}
