// Errors as the OpenAI clients read them: {error: {message, type, param, code}} with the HTTP status;
// `type` strings follow llama-server's (invalid_request_error, authentication_error, ...), `code` is
// OpenAI's string (e.g. context_length_exceeded) or null.
import { KvpackError } from '../errors.js';

export type ErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'rate_limit_error' | 'unavailable_error' | 'server_error';

export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null } & Record<string, unknown>;
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
    /** OpenAI's machine-readable code, when there is one. */
    readonly code: string | null = null,
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { error: { ...this.extra, message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const badRequest = (message: string, param: string | null = null) => new HttpError(400, 'invalid_request_error', message, param);

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/**
 * One 400 from ajv's errors: the deepest path wins (a union's branches all report; the branch that got
 * furthest says what is wrong), a limit or range over a type mismatch, literal alternatives listed.
 */
function validationError(errors: AjvError[], where: string): HttpError {
  const depth = (e: AjvError) => (e.instancePath ?? '').split('/').length + (e.params?.['additionalProperty'] || e.params?.['missingProperty'] ? 1 : 0);
  const rank = (e: AjvError) => (e.keyword === 'anyOf' ? 0 : e.keyword === 'type' || e.keyword === 'const' ? 1 : 2);
  const best = errors.reduce((a, e) => (depth(e) > depth(a) || (depth(e) === depth(a) && rank(e) > rank(a)) ? e : a), errors[0]!);
  const extra = (best.params?.['missingProperty'] ?? best.params?.['additionalProperty']) as string | undefined;
  const base = (best.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
  const path = extra ? (base ? `${base}.${extra}` : extra) : base;
  let why = best.message ?? 'is invalid';
  if (best.keyword === 'additionalProperties') why = 'unknown field (not a parameter kvpack accepts: see the Serve section of README)';
  else if (best.keyword === 'maxItems') why = `must have at most ${String(best.params?.['limit'])} items`;
  else if (best.keyword === 'const') {
    const allowed = errors.filter((e) => e.keyword === 'const' && e.instancePath === best.instancePath).map((e) => JSON.stringify(e.params?.['allowedValue']));
    why = `must be one of ${allowed.join(', ')}`;
  } else if (Array.isArray(best.params?.['allowedValues'])) why += ` (${(best.params['allowedValues'] as unknown[]).join(', ')})`;
  return badRequest(`${where}${path ? `.${path}` : ''}: ${why}`, path || null);
}

/** What fastify or our library threw, as an HttpError: 4xx keep their status, typed library errors are 400, the rest 500. */
export function toHttpError(e: unknown): HttpError {
  if (e instanceof HttpError) return e;
  const err = e as { statusCode?: number; code?: string; message?: string; validation?: AjvError[]; validationContext?: string };
  if (err?.validation) return validationError(err.validation, err.validationContext ?? 'body');
  if (err?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new HttpError(413, 'invalid_request_error', 'request body is too large');
  if (e instanceof KvpackError) return badRequest(e.message);
  const status = err?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const type: ErrorType = status === 404 ? 'not_found_error' : status === 401 ? 'authentication_error' : 'invalid_request_error';
    return new HttpError(status, type, err.message ?? 'bad request');
  }
  return new HttpError(500, 'server_error', (e as Error)?.message ?? String(e));
}
