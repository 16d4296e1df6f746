// In a browser the host runs its bundled pool-worker.js (built from pool-worker-entry.ts; pool-host.browser.ts).
export const poolWorkerUrl = (): URL | null => null;
