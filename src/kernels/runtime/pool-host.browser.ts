// Pool workers in a browser: module Web Workers running the bundled pool-worker.js (next to the bundle
// that spawns them; scripts/build-browser.mjs builds it from the unit-job kind's worker script), their init posted as the first message. Shared memory crosses to a worker only when
// the page is cross-origin isolated (COOP/COEP headers); otherwise attention and matmuls use one thread.
import type { PoolHost } from './pool-host-api.js';

const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;

export const host: PoolHost = {
  cores: Math.max(1, globalThis.navigator?.hardwareConcurrency ?? 1),
  unavailable: isolated ? '' : 'the page is not cross-origin isolated (no COOP/COEP headers): one thread',
  blockingStart: false,
  // (The kind's script is bundled as pool-worker.js beside this bundle: scripts/build-browser.mjs.)
  spawn(init) {
    const w = new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module', name: `kvpack-pool-${init.id}` });
    w.postMessage(init);
    return w;
  },
};
