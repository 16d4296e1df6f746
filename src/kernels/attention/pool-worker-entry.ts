// The pool's worker script (Node; the browser's pool-worker.js bundle is built from it): attention's unit-job
// kind registers first, then the generic worker loop starts (runtime/pool-worker.ts).
import './unit-jobs.js';
import '../runtime/pool-worker.js';
