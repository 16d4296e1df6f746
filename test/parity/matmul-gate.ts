// The matmul part of the parity gate: every weight type the wasm matmuls take x token counts x shapes x
// activation paths, the wasm product against the TS reference (Weight.matmulRef on the dequantized
// weights) within the named bounds of matmul-weights.ts, each check naming the kernel that ran; the gate
// fails when a fast kernel never ran (a plan that silently fell back would prove nothing).
// `node dist-test/test/parity/matmul-gate.js --full` runs the full grid (npm run gate runs it after gate.ts).
import { pathToFileURL } from 'node:url';
import { Weight } from '../../src/model/forward-weights.js';
import { matmulKernelFor } from '../../src/kernels/matmul/plan.js';
import { wasmMatmul } from '../../src/kernels/matmul/matmul.js';
import type { Activations } from '../../src/kernels/matmul/config.js';
import { dequantize } from '../../src/kernels/matmul/dequant.js';
import { GGML, ggmlType } from '../../src/gguf/types.js';
import { encode } from '../../src/formats/codec.js';
import { kernelBuild, wasmFailure, wasmKernels } from '../../src/kernels/runtime/wasm.js';
import { configureMatmul } from '../../src/kernels/matmul/config.js';
import { WASM_FACTS, weightType, weightTypeName } from '../../src/kernels/matmul/table.js';
import { Prng } from '../../src/numeric/prng.js';
import type { GateResult } from '../../src/parity/gate.js';
import { FLOAT_TYPES, K_TYPES, MATMUL_TYPES, matmulTolerance, randomWeight, REPACK_TYPES } from './matmul-weights.js';

export interface MatmulGrid {
  readonly rows: readonly number[];
  /** Tokens per call: 1 and a few (one-token kernels), small batches (row kernels), quads (tiles). */
  readonly tokens: readonly number[];
  /** Column counts: float types take any, block types whole blocks (32 or 256 values). */
  readonly floatCols: readonly number[];
  readonly blockCols: readonly number[];
  readonly kCols: readonly number[];
}

/** Kernels the gate must see run (src/kernels/matmul/plan.ts); matmulQ8Relaxed too when the relaxed build loaded. */
export const MATMUL_KERNELS = ['matmulVec', 'matmulQ8Tiled', 'matmulF32Tiled'] as const;

/**
 * The product with the relaxed tiles off (the baseline tiles, which the relaxed build also holds): null when
 * the bits agree with y, else the first difference. Integer block dots are exact, so they must agree.
 */
function relaxedDiffers(w: Weight, x: Float32Array, n: number, y: Float32Array): string | null {
  const base = new Float32Array(y.length);
  configureMatmul({ relaxed: false });
  try {
    wasmMatmul(w.packedWeight!, x, n, base, 'q8');
  } finally {
    configureMatmul({ relaxed: true });
  }
  return firstDifference(y, base, 'baseline');
}

/** null when a and b hold the same bits, else the first difference (b named `what`). */
function firstDifference(a: Float32Array, b: Float32Array, what: string): string | null {
  const p = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const q = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < p.length; i++) if (p[i] !== q[i]) return `output ${i}: ${a[i]} vs ${what} ${b[i]}`;
  return null;
}

/**
 * For a weight repacked at load (a kernel layout, interleave.ts): the same file bytes loaded in their file
 * layout, which every product is compared with bit for bit (both sum each output in one order); null when w
 * kept its file layout.
 */
function fileLayoutTwin(w: Weight, type: number, data: Uint8Array): Weight | null {
  if (w.packedWeight!.type === type) return null;
  configureMatmul({ repack: false });
  try {
    return new Weight('w', { type, dims: [w.cols, w.rows], data });
  } finally {
    configureMatmul({ repack: true });
  }
}

/** The npm-test grid: leftover rows of four-row groups and strips, whole groups (8: repacked q4_0), every token path (~2 s). */
/** blockCols 7680 (and 4096 in the full grid): rows of 2 KiB and more (q8_0, q4_0), which the one-token kernel runs eight at a time. */
export const SMALL_MATMUL_GRID: MatmulGrid = {
  rows: [3, 6, 8, 37],
  tokens: [1, 2, 3, 4, 7, 9],
  floatCols: [37, 130],
  blockCols: [96, 288, 7680],
  kCols: [256, 768, 7424],
};
export const FULL_MATMUL_GRID: MatmulGrid = {
  rows: [1, 2, 3, 4, 5, 7, 8, 9, 37, 130],
  tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 64],
  floatCols: [5, 8, 37, 64, 130, 768],
  blockCols: [32, 96, 128, 288, 768, 4096, 7680],
  kCols: [256, 768, 2048, 7424],
};

/**
 * The worst |y - ref| over all outputs as a fraction of its bound (matmulTolerance; > 1 fails), and where.
 * y, ref: [n, rows]; full: the weight dequantized [rows, cols]; x: [n, cols]; qb: int8 block or null.
 */
export function worstError(
  y: Float32Array,
  ref: Float32Array,
  full: Float32Array,
  x: Float32Array,
  n: number,
  rows: number,
  cols: number,
  qb: number | null,
): { worst: number; at: string } {
  let worst = 0;
  let at = '';
  for (let t = 0; t < n; t++) {
    const tol = matmulTolerance(full, x.subarray(t * cols, (t + 1) * cols), rows, cols, qb);
    for (let r = 0; r < rows; r++) {
      const e = Math.abs(y[t * rows + r]! - ref[t * rows + r]!) / tol[r]!;
      // NaN (a wrong Inf or NaN output) counts as the worst.
      if (!(e <= worst)) {
        worst = Number.isNaN(e) ? Infinity : e;
        at = `t ${t} r ${r}: ${y[t * rows + r]} vs ${ref[t * rows + r]}`;
      }
    }
  }
  return { worst, at };
}

/** 32-value block types whose one-token kernels need finite block scales (and mins): others take the row kernel. */
const SCALED_BLOCKS: ReadonlySet<number> = new Set(MATMUL_TYPES.filter((t) => weightType(t)!.scalesChecked));

/**
 * A weight with an Inf block scale in row 1 and a NaN one in row 2 (the last row of [4, 96] otherwise
 * random) at the one-token sizes with q8 activations: the rows with a non-finite scale stay non-finite, the
 * others within their bound, whatever kernel the plan picks (the row kernel, as the one-token kernels turn
 * Inf/NaN scales finite).
 */
function nonFiniteScales(type: number, grid: MatmulGrid, rng: Prng, ran: Map<string, number>, report: (ok: boolean, line: string) => void): void {
  const name = ggmlType(type)!.name;
  const rows = 4,
    cols = 96;
  const bb = ggmlType(type)!.blockBytes;
  const data = randomWeight(type, rows, cols, rng);
  data.set([0x00, 0x7c], 1 * 3 * bb + bb);
  data.set([0x00, 0x7e], 2 * 3 * bb + 2 * bb);
  const w = new Weight('w', { type, dims: [cols, rows], data });
  const full = dequantize(type, data, rows * cols, 'w');
  const finite = [0, 3];
  for (const n of grid.tokens.filter((t) => t <= 3)) {
    const x = rng.normals(n * cols);
    const ref = new Float32Array(n * rows);
    w.matmulRef(x, n, ref);
    const kernel = matmulKernelFor(w.packedWeight!, n, 'q8');
    ran.set(kernel, (ran.get(kernel) ?? 0) + 1);
    const y = new Float32Array(n * rows);
    wasmMatmul(w.packedWeight!, x, n, y, 'q8');
    let kept = true;
    for (let t = 0; t < n; t++) kept &&= !Number.isFinite(y[t * rows + 1]!) && !Number.isFinite(y[t * rows + 2]!);
    const pick = (a: Float32Array, len: number) =>
      Float32Array.from(
        Array.from({ length: n }, (_, t) => finite.flatMap((r) => Array.from(a.subarray((t * rows + r) * len, (t * rows + r + 1) * len)))).flat(),
      );
    const fullRows = Float32Array.from(finite.flatMap((r) => Array.from(full.subarray(r * cols, (r + 1) * cols))));
    const { worst, at } = worstError(pick(y, 1), pick(ref, 1), fullRows, x, n, finite.length, cols, 32);
    report(
      kept && worst <= 1,
      `matmul ${name} [${rows}, ${cols}] n=${n} q8 acts ${kernel}, Inf and NaN block scales: ${kept ? 'kept' : 'NOT kept'}, other rows' worst error ${worst.toFixed(3)} of its bound${worst > 1 ? ` (${at})` : ''}`,
    );
  }
}

/**
 * Weights at their largest quantized magnitudes (32-value blocks: per block one value -1, the rest 15/16, so
 * q4 nibbles 15, q5 values 31; q4_K / q5_K: random scales, every quant bit set) times x all +1 or all -1
 * (int8 127 / -127): the integer block sums at their extremes, where an int16 accumulator that held too
 * many products would wrap. Checked like the grid (bound, kernel, bits).
 */
function extremeWeight(type: number, rows: number, cols: number, rng: Prng): Uint8Array {
  if (K_TYPES.has(type)) {
    const data = randomWeight(type, rows, cols, rng);
    const bb = ggmlType(type)!.blockBytes;
    // q4_K / q5_K: d, dmin and 12 scale bytes first; then (q5_K: qh and) qs. q6_K keeps its random bits.
    if (type !== GGML.Q6_K) for (let b = 0; b < data.length; b += bb) data.fill(0xff, b + 16, b + bb);
    return data;
  }
  const v = new Float32Array(rows * cols).fill(15 / 16);
  for (let i = 0; i < v.length; i += 32) v[i] = -1;
  return encode(ggmlType(type)!.name, v, [rows, cols]);
}

export function runMatmulGate(grid: MatmulGrid, log: (line: string) => void = console.log): GateResult {
  const result: GateResult = { passed: 0, failed: 0, fallback: 0, notApplicable: 0, neverRan: [], failures: [] };
  if (wasmFailure()) {
    log(`matmul gate: wasm kernels unavailable (${wasmFailure()}): nothing to check`);
    result.fallback++;
    return result;
  }
  const ran = new Map<string, number>();
  const report = (ok: boolean, line: string) => {
    if (ok) result.passed++;
    else {
      result.failed++;
      result.failures.push(line);
    }
    log(`${ok ? 'PASS' : 'FAIL'} ${line}`);
  };
  const build = kernelBuild()!;
  log(`matmul gate: kernel build ${build.note}`);
  if (!build.relaxed) result.fallback++;
  // Kernel layouts: the module's facts and kernels agree with the table, and the build repacks what the table says.
  const repackRan = new Map<number, number>();
  for (const layout of REPACK_TYPES) {
    const row = weightType(layout)!;
    const e = wasmKernels()!.exports;
    for (const [i, [field, ofRow]] of WASM_FACTS.entries())
      report(
        e['weightTypeFacts']!(layout, i) === ofRow(row),
        `matmul layout ${weightTypeName(layout)}: the table's ${field} ${ofRow(row)}, the module's ${e['weightTypeFacts']!(layout, i)}`,
      );
    report(
      e['vecOrder']!(layout) === row.oneToken?.order,
      `matmul layout ${weightTypeName(layout)}: the table's one-token order ${row.oneToken?.order}, vecOrder's ${e['vecOrder']!(layout)}`,
    );
    const repacks = e['repackTypeOf']!(row.repackOf!) === layout;
    const expected = row.repackIn === 'all' || (row.repackIn === 'relaxed') === build.relaxed;
    report(
      repacks === expected,
      `matmul layout ${weightTypeName(layout)}: ${build.relaxed ? 'a relaxed' : 'a baseline'} build ${expected ? 'repacks' : 'keeps'} ${ggmlType(row.repackOf!)!.name} (the module: ${repacks ? 'repacks' : 'keeps'})`,
    );
    if (build.relaxed)
      report(
        e['relaxedTileType']!(layout) === (row.relaxedTile ? 1 : 0),
        `matmul layout ${weightTypeName(layout)}: the table's relaxed tile ${row.relaxedTile}`,
      );
    if (expected) repackRan.set(layout, 0);
  }
  for (const type of MATMUL_TYPES) {
    const name = ggmlType(type)!.name;
    const qb = weightType(type)!.actBlock || 32;
    // Types with a one-token kernel must run it for one token (q8 activations for the integer types); the
    // table's activation order is the one the kernel reads.
    const row = weightType(type)!;
    const hasVec = row.oneToken !== null;
    const facts = wasmKernels()!.exports['weightTypeFacts']!;
    for (const [i, [field, ofRow]] of WASM_FACTS.entries()) {
      const inModule = facts(type, i) as number;
      report(inModule === ofRow(row), `matmul ${name}: the table's ${field} ${ofRow(row)}, the module's ${inModule}`);
    }
    // Past the shared fields the module answers -2: a field added on one side only fails here.
    report(facts(type, WASM_FACTS.length) === -2, `matmul ${name}: the module shares ${WASM_FACTS.length} fields with the table`);
    const kernelOrder = wasmKernels()!.exports['vecOrder']!(type) as number;
    report(kernelOrder === (row.oneToken?.order ?? -1), `matmul ${name}: the table's one-token order ${row.oneToken?.order ?? -1}, vecOrder's ${kernelOrder}`);
    // The table's relaxed one-token kernels (q4_0, q4_K, q5_K) are the ones that run in a relaxed build, so its
    // checks below are theirs; a baseline build runs none.
    const vecRelaxed = wasmKernels()!.exports['vecRelaxedType']!(type) === 1;
    const wantRelaxed = build.relaxed && row.oneToken?.relaxed === true;
    report(vecRelaxed === wantRelaxed, `matmul ${name}: the one-token kernel is ${wantRelaxed ? '' : 'not '}the relaxed one (the module: ${vecRelaxed})`);
    if (build.relaxed) {
      const inModule = wasmKernels()!.exports['relaxedTileType']!(type) === 1;
      report(inModule === row.relaxedTile, `matmul ${name}: the table's relaxed tile ${row.relaxedTile}, the module's ${inModule}`);
    }
    let vecRan = 0;
    const colsList = FLOAT_TYPES.has(type) ? grid.floatCols : K_TYPES.has(type) ? grid.kCols : grid.blockCols;
    const rng = new Prng(1000 + type);
    for (const cols of colsList) {
      for (const rows of grid.rows) {
        const data = randomWeight(type, rows, cols, rng);
        const w = new Weight('w', { type, dims: [cols, rows], data });
        if (!w.packedWeight) {
          report(false, `matmul ${name} [${rows}, ${cols}]: not in the wasm arena`);
          continue;
        }
        const twin = fileLayoutTwin(w, type, data);
        const full = dequantize(type, data, rows * cols, 'w');
        for (const n of grid.tokens) {
          const x = rng.normals(n * cols);
          // A zero block (zero scale) and one large value (a wide block range).
          x.fill(0, 0, Math.min(cols, qb));
          if (cols > qb) x[qb + 3] = 40;
          checkOne(w, full, x, n, rows, cols, '', twin);
        }
      }
    }
    // Extreme integer sums (block types), x of either sign, both tile paths; 8 rows: whole row groups (a repacked
    // layout where the build has one), one token too.
    if (!FLOAT_TYPES.has(type))
      for (const [rows, ns] of [
        [5, [4, 9]],
        [8, [1, 4]],
      ] as const)
        for (const sign of [1, -1]) {
          const cols = K_TYPES.has(type) ? 512 : 96;
          const data = extremeWeight(type, rows, cols, rng);
          const w = new Weight('w', { type, dims: [cols, rows], data });
          const full = dequantize(type, data, rows * cols, 'w');
          const twin = fileLayoutTwin(w, type, data);
          for (const n of ns) checkOne(w, full, new Float32Array(n * cols).fill(sign), n, rows, cols, `extreme sums, x ${sign > 0 ? '+' : '-'}1`, twin);
        }
    // K-quant block scales of every finite f16 class (subnormals half the time, zeros, both signs) on whole row
    // groups: the kernels that convert them four at a time (q4_Kx4) must keep the exact scalar conversion's bits.
    if (K_TYPES.has(type) && !FLOAT_TYPES.has(type)) {
      const rows = 8,
        cols = 512;
      const data = randomWeight(type, rows, cols, rng);
      const bb = ggmlType(type)!.blockBytes;
      const half = () => (rng.int(2) ? rng.int(0x400) : rng.int(0x7c00)) | (rng.int(2) << 15);
      for (let b = 0; b < data.length; b += bb)
        for (const at of type === GGML.Q6_K ? [b + 208] : [b, b + 2]) {
          const h = half();
          data[at] = h & 0xff;
          data[at + 1] = h >> 8;
        }
      const w = new Weight('w', { type, dims: [cols, rows], data });
      const full = dequantize(type, data, rows * cols, 'w');
      const twin = fileLayoutTwin(w, type, data);
      for (const n of [1, 4]) checkOne(w, full, rng.normals(n * cols), n, rows, cols, 'f16 scales of every finite class', twin);
    }
    // One check: the wasm product of n tokens against the reference, per activation path, naming the kernel.
    // twin: the weight in its file layout, when w was repacked (fileLayoutTwin).
    function checkOne(w: Weight, full: Float32Array, x: Float32Array, n: number, rows: number, cols: number, what = '', twin: Weight | null = null): void {
      const layout = w.packedWeight!.type !== type ? w.packedWeight!.type : null;
      const ref = new Float32Array(n * rows);
      w.matmulRef(x, n, ref);
      const acts: Activations[] = FLOAT_TYPES.has(type) ? ['f32'] : ['f32', 'q8'];
      for (const a of acts) {
        const kernel = matmulKernelFor(w.packedWeight!, n, a);
        ran.set(kernel, (ran.get(kernel) ?? 0) + 1);
        if (n === 1 && (a === 'q8' || FLOAT_TYPES.has(type))) {
          if (kernel === 'matmulVec') vecRan++;
          else if (hasVec) report(false, `matmul ${name} [${rows}, ${cols}] n=1 ${a} acts: ran ${kernel}, not its one-token kernel`);
        }
        const y = new Float32Array(n * rows);
        wasmMatmul(w.packedWeight!, x, n, y, a);
        const { worst, at } = worstError(y, ref, full, x, n, rows, cols, a === 'q8' ? qb : null);
        // The relaxed tiles also against the baseline tiles, bit for bit.
        const differs = kernel === 'matmulQ8Relaxed' ? relaxedDiffers(w, x, n, y) : null;
        let bits = kernel === 'matmulQ8Relaxed' ? (differs ? `, NOT the baseline tiles' bits (${differs})` : ", the baseline tiles' bits") : '';
        let layoutDiffers: string | null = null;
        if (layout !== null) {
          const base = new Float32Array(y.length);
          if (twin) wasmMatmul(twin.packedWeight!, x, n, base, a);
          layoutDiffers = !twin
            ? 'no file-layout twin to compare'
            : twin.packedWeight!.type !== type
              ? `the file-layout twin was repacked too (${weightTypeName(twin.packedWeight!.type)})`
              : firstDifference(y, base, 'file layout');
          bits += layoutDiffers ? `, NOT the file layout's bits (${layoutDiffers})` : ", the file layout's bits";
          if (kernel === 'matmulVec') repackRan.set(layout, (repackRan.get(layout) ?? 0) + 1);
        }
        report(
          worst <= 1 && !differs && !layoutDiffers,
          `matmul ${name}${layout !== null ? ` as ${weightTypeName(layout)}` : ''} [${rows}, ${cols}] n=${n}${what ? ` (${what})` : ''} ${a} acts ${kernel}: worst error ${worst.toFixed(3)} of its bound${worst > 1 ? ` (${at})` : ''}${bits}`,
        );
      }
    }
    if (hasVec) report(vecRan > 0, `matmul ${name}: the one-token kernel ran ${vecRan} checks`);
    if (SCALED_BLOCKS.has(type)) nonFiniteScales(type, grid, rng, ran, report);
  }
  // Each layout this build repacks to must have run its one-token kernel (a repack that never happened would prove nothing).
  for (const [layout, count] of repackRan) report(count > 0, `matmul layout ${weightTypeName(layout)}: its one-token kernel ran ${count} checks`);
  for (const k of [...MATMUL_KERNELS, ...(build.relaxed ? ['matmulQ8Relaxed'] : [])])
    report((ran.get(k) ?? 0) > 0, `matmul kernel ${k} ran ${ran.get(k) ?? 0} checks`);
  if (!build.relaxed) log(`matmul gate: matmulQ8Relaxed not checked: the ${build.note} build loaded`);
  log(`matmul: ${result.passed} passed, ${result.failed} failed`);
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = runMatmulGate(process.argv.includes('--full') ? FULL_MATMUL_GRID : SMALL_MATMUL_GRID);
  if (r.failed > 0) {
    console.log('failures:');
    for (const x of r.failures) console.log(`  ${x}`);
  }
  process.exitCode = r.failed > 0 ? 1 : 0;
}
