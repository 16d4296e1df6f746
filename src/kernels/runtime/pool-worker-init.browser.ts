// A pool worker's start data in a browser: the first message its creator posts (pool-host.browser.ts).
// Top-level await, so pool-worker.ts reads it like Node's workerData.
export const workerData: unknown = await new Promise((resolve) => {
  addEventListener('message', (e) => resolve((e as MessageEvent).data), { once: true });
});
