// What the routes share: the engine once loaded, the server's lifecycle state and its static settings.
import { HttpError } from './http-error.js';
import type { Engine } from './engine.js';

export type ServerState = 'loading' | 'ready' | 'draining' | 'failed';

export class ServerContext {
  engine: Engine | null = null;
  state: ServerState = 'loading';
  /** Why loading failed (state 'failed'). */
  problem = '';

  constructor(
    readonly modelName: string,
    readonly slotSavePath: string | undefined,
  ) {}

  /** The engine, or 503 (with retry-after) while it loads or the server shuts down. */
  need(): Engine {
    if (this.state === 'ready' && this.engine) return this.engine;
    throw this.unavailable();
  }

  unavailable(): HttpError {
    if (this.state === 'loading') return new HttpError(503, 'unavailable_error', 'Loading model', null, {}, 5);
    if (this.state === 'failed') return new HttpError(503, 'unavailable_error', `the model failed to load: ${this.problem}`);
    return new HttpError(503, 'unavailable_error', 'the server is shutting down', null, {}, 5);
  }
}
