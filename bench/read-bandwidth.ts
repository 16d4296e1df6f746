// The machine's read bandwidth now (bench/native/read-bandwidth.c, built once with the C compiler into the
// cache dir): recorded beside each timed run, since another tenant's memory traffic on the host slows a
// memory-bound decode without showing in this machine's load or CPU (2-thread reads varied 27-56 GB/s
// within a minute on a quiet-looking VM here). Without a C compiler the probe is off and says so once.
import { nativeProbe, runProbe, type Probe } from './native-probe.js';

/** The probe's buffer (past the L3 of the machines here) and its passes (the best is kept): ~0.3 s a probe. */
const PROBE_MIB = 256;
const PROBE_PASSES = 5;

/** The built probe, or why there is none (no source, no compiler, a failed build); built once per process. */
export function bandwidthProbe(): Probe {
  return nativeProbe('read-bandwidth');
}

/** GB/s read by `threads` threads now (best of the probe's passes), or null when there is no probe. */
export function readBandwidthNow(threads: number): number | null {
  return runProbe('read-bandwidth', [`${PROBE_MIB}`, `${threads}`, `${PROBE_PASSES}`]);
}
