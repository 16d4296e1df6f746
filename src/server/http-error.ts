// Errors as the OpenAI clients read them: {error: {message, type, param, code}} with the HTTP status;
// `type` strings follow llama-server's (invalid_request_error, authentication_error, ...).
import { KvpackError } from '../errors.js';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'unavailable_error'
  | 'server_error'
  | 'exceed_context_size_error';

export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: number } & Record<string, unknown>;
}

/** A request that fails with `status`; `extra` fields join the error object (e.g. n_prompt_tokens). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly param: string | null = null,
    readonly extra: Record<string, unknown> = {},
    /** Seconds a client should wait before retrying (429 / 503). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { error: { ...this.extra, message: this.message, type: this.type, param: this.param, code: this.status } };
  }
}

export const badRequest = (message: string, param: string | null = null) => new HttpError(400, 'invalid_request_error', message, param);

/** The prompt does not fit the slot's context (llama-server's exceed_context_size_error, both counts given). */
export function exceedContext(promptTokens: number, ctx: number): HttpError {
  return new HttpError(400, 'exceed_context_size_error', `the request has ${promptTokens} prompt tokens, the context holds ${ctx}`, null, { n_prompt_tokens: promptTokens, n_ctx: ctx });
}

/** What fastify or our library threw, as an HttpError: 4xx keep their status, typed library errors are 400, the rest 500. */
export function toHttpError(e: unknown): HttpError {
  if (e instanceof HttpError) return e;
  const err = e as { statusCode?: number; code?: string; message?: string; validation?: { instancePath?: string; message?: string; params?: Record<string, unknown> }[]; validationContext?: string };
  if (err?.validation) {
    const v = err.validation[0];
    const missing = v?.params?.['missingProperty'];
    const path = `${(v?.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.')}${missing ? `${v?.instancePath ? '.' : ''}${String(missing)}` : ''}`;
    // The first reason only: a nullable field's later alternatives ("must be null") say nothing new.
    const allowed = v?.params?.['allowedValues'];
    const why = `${v?.message ?? 'is invalid'}${Array.isArray(allowed) ? ` (${allowed.join(', ')})` : ''}`;
    return badRequest(`${err.validationContext ?? 'body'}${path ? `.${path}` : ''}: ${why}`, path || null);
  }
  if (err?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new HttpError(413, 'invalid_request_error', 'request body is too large');
  if (e instanceof KvpackError) return badRequest(e.message);
  const status = err?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const type: ErrorType = status === 404 ? 'not_found_error' : status === 401 ? 'authentication_error' : 'invalid_request_error';
    return new HttpError(status, type, err.message ?? 'bad request');
  }
  return new HttpError(500, 'server_error', (e as Error)?.message ?? String(e));
}
