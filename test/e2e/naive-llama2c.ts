// An independent float64 llama2.c forward pass (run.c, written plainly over number arrays), reading the
// .bin directly: the reference the engine's stories260K decode is checked against. Shares no engine code.
import { readFileSync } from 'node:fs';

interface Naive {
  dim: number;
  hidden: number;
  nLayers: number;
  nHeads: number;
  nKv: number;
  vocab: number;
  seqLen: number;
  w: Record<string, Float64Array>;
}

/** Reads header and weights (llama2.c order: embedding, per-kind-all-layers, final norm, rope tables, [wcls]). */
export function readNaive(path: string): Naive {
  const buf = readFileSync(path);
  const h = Array.from({ length: 7 }, (_, i) => buf.readInt32LE(i * 4));
  const [dim, hidden, nLayers, nHeads, nKv, vocabSigned, seqLen] = h as [number, number, number, number, number, number, number];
  const vocab = Math.abs(vocabSigned);
  const hs = dim / nHeads;
  let at = 28;
  const take = (n: number): Float64Array => {
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = buf.readFloatLE(at + 4 * i);
    at += 4 * n;
    return out;
  };
  const w: Record<string, Float64Array> = {};
  w.emb = take(vocab * dim);
  w.attNorm = take(nLayers * dim);
  w.wq = take(nLayers * dim * dim);
  w.wk = take(nLayers * dim * nKv * hs);
  w.wv = take(nLayers * dim * nKv * hs);
  w.wo = take(nLayers * dim * dim);
  w.ffnNorm = take(nLayers * dim);
  w.w1 = take(nLayers * hidden * dim);
  w.w2 = take(nLayers * dim * hidden);
  w.w3 = take(nLayers * hidden * dim);
  w.finalNorm = take(dim);
  take((seqLen * hs) / 2); // freq_cis_real (unused)
  take((seqLen * hs) / 2); // freq_cis_imag (unused)
  w.cls = vocabSigned > 0 ? w.emb : take(vocab * dim);
  return { dim, hidden, nLayers, nHeads, nKv, vocab, seqLen, w };
}

function matvec(out: Float64Array, x: Float64Array, w: Float64Array, wOff: number, n: number, d: number): void {
  for (let i = 0; i < d; i++) {
    let s = 0;
    for (let j = 0; j < n; j++) s += w[wOff + i * n + j]! * x[j]!;
    out[i] = s;
  }
}

function rmsnorm(out: Float64Array, x: Float64Array, w: Float64Array, wOff: number, n: number): void {
  let ss = 0;
  for (let j = 0; j < n; j++) ss += x[j]! * x[j]!;
  const s = 1 / Math.sqrt(ss / n + 1e-5);
  for (let j = 0; j < n; j++) out[j] = w[wOff + j]! * (s * x[j]!);
}

/** Greedy tokens from `start` for `steps` steps, llama2.c's loop in float64. */
export function naiveGreedy(m: Naive, start: number, steps: number): number[] {
  const { dim, hidden, nLayers, nHeads, nKv, w } = m;
  const hs = dim / nHeads;
  const kvDim = nKv * hs;
  const keyCache = new Float64Array(nLayers * m.seqLen * kvDim);
  const valCache = new Float64Array(nLayers * m.seqLen * kvDim);
  const x = new Float64Array(dim),
    xb = new Float64Array(dim),
    xb2 = new Float64Array(dim);
  const q = new Float64Array(dim),
    k = new Float64Array(kvDim),
    v = new Float64Array(kvDim);
  const hb = new Float64Array(hidden),
    hb2 = new Float64Array(hidden);
  const att = new Float64Array(m.seqLen),
    logits = new Float64Array(m.vocab);
  const out = [start];
  let token = start;
  for (let pos = 0; pos < steps; pos++) {
    for (let i = 0; i < dim; i++) x[i] = w.emb![token * dim + i]!;
    for (let l = 0; l < nLayers; l++) {
      rmsnorm(xb, x, w.attNorm!, l * dim, dim);
      matvec(q, xb, w.wq!, l * dim * dim, dim, dim);
      matvec(k, xb, w.wk!, l * dim * kvDim, dim, kvDim);
      matvec(v, xb, w.wv!, l * dim * kvDim, dim, kvDim);
      // RoPE on adjacent pairs, frequency by index within the head.
      for (let i = 0; i < dim; i += 2) {
        const freq = 1 / 10000 ** ((i % hs) / hs);
        const fcr = Math.cos(pos * freq),
          fci = Math.sin(pos * freq);
        for (const vec of i < kvDim ? [q, k] : [q]) {
          const a = vec[i]!,
            b = vec[i + 1]!;
          vec[i] = a * fcr - b * fci;
          vec[i + 1] = a * fci + b * fcr;
        }
      }
      const lo = l * m.seqLen * kvDim;
      keyCache.set(k, lo + pos * kvDim);
      valCache.set(v, lo + pos * kvDim);
      for (let h = 0; h < nHeads; h++) {
        const kvh = Math.floor(h / (nHeads / nKv));
        let max = -Infinity;
        for (let t = 0; t <= pos; t++) {
          let s = 0;
          for (let i = 0; i < hs; i++) s += q[h * hs + i]! * keyCache[lo + t * kvDim + kvh * hs + i]!;
          att[t] = s / Math.sqrt(hs);
          max = Math.max(max, att[t]!);
        }
        let sum = 0;
        for (let t = 0; t <= pos; t++) sum += att[t] = Math.exp(att[t]! - max);
        for (let i = 0; i < hs; i++) {
          let acc = 0;
          for (let t = 0; t <= pos; t++) acc += (att[t]! / sum) * valCache[lo + t * kvDim + kvh * hs + i]!;
          xb[h * hs + i] = acc;
        }
      }
      matvec(xb2, xb, w.wo!, l * dim * dim, dim, dim);
      for (let i = 0; i < dim; i++) x[i] += xb2[i]!;
      rmsnorm(xb, x, w.ffnNorm!, l * dim, dim);
      matvec(hb, xb, w.w1!, l * dim * hidden, dim, hidden);
      matvec(hb2, xb, w.w3!, l * dim * hidden, dim, hidden);
      for (let i = 0; i < hidden; i++) hb[i] = (hb[i]! / (1 + Math.exp(-hb[i]!))) * hb2[i]!;
      matvec(xb, hb, w.w2!, l * dim * hidden, hidden, dim);
      for (let i = 0; i < dim; i++) x[i] += xb[i]!;
    }
    rmsnorm(x, x, w.finalNorm!, 0, dim);
    matvec(logits, x, w.cls!, 0, dim, m.vocab);
    let best = 0;
    for (let i = 1; i < m.vocab; i++) if (logits[i]! > logits[best]!) best = i;
    token = best;
    out.push(token);
  }
  return out;
}
