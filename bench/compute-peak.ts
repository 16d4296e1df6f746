// The machine's multiply-add peak now (bench/native/fma-peak.c, built once like the read-bandwidth probe):
// independent chains of vector FMAs, nothing loaded. At 128 bits it is the most any WebAssembly SIMD kernel
// can issue here (one f32x4 multiply-add per instruction); at 256 bits what native AVX2 code can.
import { nativeProbe, runProbe, type Probe } from './native-probe.js';

const PASSES = 5;

export function fmaProbe(): Probe {
  return nativeProbe('fma-peak');
}

/** G multiply-adds (f32 lanes) per second on `threads` threads with `bits`-wide vectors, or null without the probe. */
export function fmaPeakNow(bits: 128 | 256, threads: number): number | null {
  return runProbe('fma-peak', [`${bits}`, `${threads}`, `${PASSES}`]);
}
