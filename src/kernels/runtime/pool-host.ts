// Pool workers in Node: worker_threads running the unit-job kind's worker script (which ends by importing
// pool-worker.js), their init passed as workerData; unref'd so they never keep the process alive.
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import type { PoolHost } from './pool-host-api.js';
import { PoolError } from '../../errors.js';

export const host: PoolHost = {
  cores: availableParallelism(),
  unavailable: '',
  blockingStart: true,
  spawn(init, script) {
    if (!script) throw new PoolError('the unit-job kind names no worker script');
    const w = new Worker(script, { workerData: init });
    w.unref();
    return w;
  },
};
