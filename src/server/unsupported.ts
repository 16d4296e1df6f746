// OpenAI request fields kvpack does not implement: each is refused with a 400 naming it, never accepted
// and ignored. (Unknown fields are refused by the schemas; these are the ones OpenAI defines.)
import { badRequest } from './http-error.js';

const set = (x: unknown) => x !== undefined && x !== null;

/** Throws the 400 for the first unsupported field `body` sets. */
export function refuseUnsupported(body: Record<string, unknown>, n: number): void {
  for (const f of ['tools', 'functions']) {
    const v = body[f];
    if (set(v) && !(Array.isArray(v) && v.length === 0)) throw badRequest(`${f}: tool and function calling is not supported`, f);
  }
  for (const f of ['tool_choice', 'function_call']) {
    const v = body[f];
    if (set(v) && v !== 'none') throw badRequest(`${f}: tool and function calling is not supported (only "none")`, f);
  }
  if (set(body['parallel_tool_calls'])) throw badRequest('parallel_tool_calls: tool calling is not supported', 'parallel_tool_calls');
  const rf = body['response_format'] as { type?: unknown } | null | undefined;
  if (set(rf) && !(typeof rf === 'object' && rf!.type === 'text' && Object.keys(rf!).length === 1)) {
    throw badRequest('response_format: only {"type": "text"} is supported (no JSON mode or schemas)', 'response_format');
  }
  const bestOf = body['best_of'];
  if (set(bestOf) && bestOf !== n) throw badRequest(`best_of: only best_of == n (${n}) is supported (no server-side ranking)`, 'best_of');
  const suffix = body['suffix'];
  if (set(suffix) && suffix !== '') throw badRequest('suffix: insertion (fill-in-the-middle) is not supported', 'suffix');
}
