// Runs every benchmark, prints tables and optionally writes JSON (--json PATH).
// Default: head dim 128, contexts 1K-64K (a few minutes). --full: head dims 64/128/256, contexts to 256K.
// Attention pairings are timed call by call in alternation (a drifting machine slows all alike); cases too big
// to hold every pairing at once run one pairing at a time, in --rounds N alternating rounds (median round).
// --formats a,b,c picks pairings (default f32,f16,q8_0,q4_0,q2k and the integer-attention variants q8_0:int8:w16,
// q4_0:int8:w16, q2k:w16: suffixes :int8/:int16 = qPrecision, :w16 = vPrecision 'int16').
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { benchAttention, benchEncode, measureBandwidth, probeThreshold } from './attention.js';
import { declareOptions, flag, option, printTable } from './harness.js';
import { ArgumentError } from '../src/errors.js';
import { wasmFailure } from '../src/kernels/runtime/wasm.js';
import { getThreads, poolFailure } from '../src/kernels/runtime/pool.js';
import { benchEngine, printEngine } from './engine.js';

declareOptions('bench', 'attention per format, head dim, context and threads; encode; then bench:engine', {
  '--full': { kind: 'switch', help: 'head dims 64,128,256 and contexts up to 262144' },
  '--formats': { kind: 'strs', help: 'cache formats', default: 'f32,f16,q8_0,q4_0,q2k,q8_0:int8:w16,q4_0:int8:w16,q2k:w16' },
  '--dims': { kind: 'ints', min: 1, help: 'head dims', default: '128 (--full 64,128,256)' },
  '--contexts': { kind: 'ints', min: 1, help: 'contexts', default: '1024,4096,16384,65536 (--full adds 262144)' },
  '--rounds': { kind: 'int', min: 1, help: 'rounds', default: 1 },
  '--json': { kind: 'str', help: 'also write the results to this file' },
  '--no-engine': { kind: 'switch', help: 'skip bench:engine' },
});
const full = flag('--full');
const names = (option('--formats') ?? 'f32,f16,q8_0,q4_0,q2k,q8_0:int8:w16,q4_0:int8:w16,q2k:w16').split(',');
const headDims = (option('--dims') ?? (full ? '64,128,256' : '128')).split(',').map(Number);
const all = getThreads();
const threadCounts = all > 1 ? [1, all] : [1];
const contexts = (option('--contexts') ?? (full ? '1024,4096,16384,65536,262144' : '1024,4096,16384,65536')).split(',').map(Number);
const log = (s: string) => process.stderr.write(`${s}\n`);

const wasm = wasmFailure();
if (wasm) log(`wasm kernels unavailable: ${wasm}`);
const bandwidth = measureBandwidth();
console.log(`single-core read bandwidth (wasm SIMD sum, 256 MiB): ${bandwidth.toFixed(1)} GB/s; threads: ${threadCounts.join(', ')}`);
const rounds = Number(option('--rounds') ?? 1);
if (!Number.isInteger(rounds) || rounds < 1) throw new ArgumentError(`bench: --rounds must be a positive integer, got '${option('--rounds')}'`);
const attention = benchAttention(names, headDims, contexts, threadCounts, bandwidth, log, rounds);
if (poolFailure()) log(`thread pool unavailable: ${poolFailure()}`);
console.log(
  `\ndecode attention, 8 kv heads x 32 query heads, one query (median per call, pairings called in alternation; x f32 = f32 time / this time at the same thread count; x bw = packed GB/s / single-core read bandwidth)`,
);
printTable(
  ['format', 'D', 'context', 'threads', 'impl', 'ms/call', 'GFLOP/s', 'GB/s', 'tok/s', 'x f32', 'x bw'],
  attention.map((r) => [
    r.format,
    `${r.headDim}`,
    `${r.context}`,
    `${r.threads}`,
    r.impl,
    (r.seconds * 1e3).toFixed(3),
    r.gflops.toFixed(1),
    r.packedGBs.toFixed(2),
    `${(r.tokensPerSecond / 1e6).toFixed(2)}M`,
    r.vsF32.toFixed(2),
    r.vsBandwidth.toFixed(2),
  ]),
);
const threshold = all > 1 ? probeThreshold(all, [256, 512, 1024, 2048, 4096]) : [];
if (threshold.length) {
  console.log(`\nthread threshold probe: q4_0 decode, D=128, 1 vs ${all} threads with the pool forced on (best of 7)`);
  printTable(
    ['context', 'work', '1 thread ms', `${all} threads ms`, 'speedup'],
    threshold.map((r) => [`${r.context}`, `${r.work}`, (r.oneThread * 1e3).toFixed(3), (r.allThreads * 1e3).toFixed(3), r.speedup.toFixed(2)]),
  );
}
const encode = benchEncode(names, headDims);
console.log('\nencode (append), 4096 tokens of one kv head per call');
printTable(
  ['format', 'D', 'impl', 'rows/s', 'input GB/s'],
  encode.map((r) => [r.format, `${r.headDim}`, r.impl, `${(r.rowsPerSecond / 1e6).toFixed(2)}M`, r.inputGBs.toFixed(2)]),
);

const json = option('--json');
if (json) {
  writeFileSync(
    json,
    JSON.stringify(
      { node: process.version, cpus: os.cpus().length, cpu: os.cpus()[0]?.model, bandwidthGBs: bandwidth, threads: threadCounts, attention, threshold, encode },
      null,
      2,
    ),
  );
  log(`wrote ${json}`);
}

// Engine: kvpack vs llama.cpp prefill/decode and per-scheme long-context decode (--no-engine skips it).
if (!flag('--no-engine')) {
  const engine = await benchEngine({ threads: all, log });
  printEngine(engine);
  if (json) writeFileSync(json.replace(/(\.json)?$/, '-engine.json'), JSON.stringify(engine, null, 2));
}
