// A pool worker's start data in Node: worker_threads' workerData (pool-worker-init.browser.ts: first message).
export { workerData } from 'node:worker_threads';
