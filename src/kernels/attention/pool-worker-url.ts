// The pool workers' script in Node: pool-worker-entry.js beside this module (the browser twin: none, its host
// runs the bundle built from that entry).
export const poolWorkerUrl = (): URL | null => new URL('./pool-worker-entry.js', import.meta.url);
