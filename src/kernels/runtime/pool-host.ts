// Pool workers in Node: worker_threads running pool-worker.js, their init passed as workerData; unref'd so
// they never keep the process alive.
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import type { PoolHost } from './pool-host-api.js';

export const host: PoolHost = {
  cores: availableParallelism(),
  unavailable: '',
  blockingStart: true,
  spawn(init) {
    const w = new Worker(new URL('./pool-worker.js', import.meta.url), { workerData: init });
    w.unref();
    return w;
  },
};
