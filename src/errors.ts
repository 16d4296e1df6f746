// Typed errors: library code throws these; only the CLI turns them into exit codes.

/** Base class: `code` is a stable machine-readable tag, the message says what to fix. */
export class KvpackError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** An unknown format id, scheme name or kernel. */
export class UnknownFormatError extends KvpackError {
  constructor(what: string, id: string, known: readonly string[]) {
    super('UNKNOWN_FORMAT', `unknown ${what} '${id}' (known: ${known.join(', ')})`);
  }
}

/** Array lengths or shapes that do not fit the operation. */
export class ShapeError extends KvpackError {
  constructor(message: string) {
    super('BAD_SHAPE', message);
  }
}

/** NaN or +-Inf where finite values are required (activations, weights). */
export class NonFiniteError extends KvpackError {
  readonly index: number;
  constructor(where: string, index: number, value: number) {
    super('NON_FINITE', `${where}: non-finite value ${value} at index ${index}`);
    this.index = index;
  }
}

/** A cache policy that cannot be built; the message names the field. */
export class PolicyError extends KvpackError {
  readonly field: string;
  constructor(field: string, message: string) {
    super('BAD_POLICY', `policy.${field}: ${message}`);
    this.field = field;
  }
}

/** A malformed, truncated or unsupported file (GGUF, checkpoint, cache file). */
export class FileFormatError extends KvpackError {
  constructor(kind: string, message: string) {
    super('BAD_FILE', `${kind}: ${message}`);
  }
}

/** A tokenizer whose model, normalizer or pre-tokenizer we do not implement; the message names it. */
export class UnsupportedTokenizerError extends KvpackError {
  constructor(where: string, what: string, name: string, supported: readonly string[]) {
    super('UNSUPPORTED_TOKENIZER', `${where}: unsupported ${what} '${name}' (supported: ${supported.join(', ')})`);
  }
}

/** A bad argument to a public function (out-of-range numbers, wrong state). */
export class ArgumentError extends KvpackError {
  constructor(message: string) {
    super('BAD_ARGUMENT', message);
  }
}

/**
 * A cache cannot serve positions its sliding-window layers already dropped (rewind too deep, attention
 * reaching before the held range). Callers fall back to clear() and a fresh prefill.
 */
export class EvictedError extends KvpackError {
  constructor(message: string) {
    super('EVICTED', message);
  }
}

/** Throws NonFiniteError at the first NaN/Inf in `values`. */
export function assertFinite(where: string, values: ArrayLike<number>, offset = 0, count = values.length - offset): void {
  for (let i = offset; i < offset + count; i++) {
    const x = values[i]!;
    if (!Number.isFinite(x)) throw new NonFiniteError(where, i, x);
  }
}

/** A remote store address (--kv-store) that cannot be used; the message says which part is wrong. */
export class StoreUrlError extends KvpackError {
  constructor(url: string, message: string) {
    super('BAD_STORE_URL', `kv store '${redactUrl(url)}': ${message}`);
  }
}

/** A URL with its password replaced, so error messages never print a secret. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z-]+:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}
