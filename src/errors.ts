// Typed errors: library code throws these; only the CLI turns them into exit codes.

/** Base class: `code` is a stable machine-readable tag, the message says what to fix. */
export class KvpackError extends Error {
  readonly code: string;
  /** `cause`: the error behind this one (an OS error, a pool worker's exception). */
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * Codes are UPPER_SNAKE words saying what went wrong (BAD_* for malformed input, UNKNOWN_* for a name no
 * registry holds), one per error class; errors.test.ts checks the convention.
 */

/** A name no registry holds; each registry has its own subclass and code. */
export class UnknownNameError extends KvpackError {
  /** The name asked for. */
  readonly id: string;
  readonly known: readonly string[];
  constructor(code: string, what: string, id: string, known: readonly string[]) {
    super(code, `unknown ${what} '${id}' (known: ${known.join(', ')})`);
    this.id = id;
    this.known = known;
  }
}

/** An unknown KV format id (or ggml tensor type). */
export class UnknownFormatError extends UnknownNameError {
  constructor(what: string, id: string, known: readonly string[]) {
    super('UNKNOWN_FORMAT', what, id, known);
  }
}

/** An unknown cache scheme name (cache/schemes.ts). */
export class UnknownSchemeError extends UnknownNameError {
  constructor(id: string, known: readonly string[]) {
    super('UNKNOWN_SCHEME', 'scheme', id, known);
  }
}

/** An unknown model architecture (GGUF general.architecture; model/arch/registry.ts). */
export class UnknownArchitectureError extends UnknownNameError {
  constructor(id: string, known: readonly string[]) {
    super('UNKNOWN_ARCHITECTURE', 'architecture', id, known);
  }
}

/** An unknown lab protocol name (lab/protocol.ts). */
export class UnknownProtocolError extends UnknownNameError {
  constructor(id: string, known: readonly string[]) {
    super('UNKNOWN_PROTOCOL', 'protocol', id, known);
  }
}

/** An unknown tokenizer model or pre-tokenizer (what says which). */
export class UnknownTokenizerError extends UnknownNameError {
  constructor(what: string, id: string, known: readonly string[]) {
    super('UNKNOWN_TOKENIZER', what, id, known);
  }
}

/** A kernel key nothing serves, or a second registration of one (kernels/attention/registry.ts). */
export class KernelError extends KvpackError {
  constructor(code: 'DUPLICATE_KERNEL' | 'UNKNOWN_KERNEL' | 'STATIC_DATA_OVERLAP', message: string) {
    super(code, message);
  }
}

/** The wasm kernels did not load (wasmFailure() says why) and the call has no JS path. */
export class WasmUnavailableError extends KvpackError {
  constructor(message: string) {
    super('WASM_UNAVAILABLE', message);
  }
}

/** A pool worker failed (its exception is the cause) or the pool is closed. */
export class PoolError extends KvpackError {
  constructor(message: string, cause?: unknown) {
    super('POOL_FAILED', message, { cause });
  }
}

/** Arena (wasm linear) memory cannot hold what a call needs. */
export class OutOfMemoryError extends KvpackError {
  constructor(message: string) {
    super('OUT_OF_MEMORY', message);
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

/**
 * A cache layer state (cache/layer-state.ts) that describes no possible layer: counts out of range, arrays of
 * the wrong size. Readers of files and shared-store values wrap it in their FileFormatError.
 */
export class CacheStateError extends KvpackError {
  constructor(message: string) {
    super('BAD_CACHE_STATE', message);
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

/** A file the user named cannot be read: missing, a directory, no permission (the OS error is the cause). */
export class FileAccessError extends KvpackError {
  readonly path: string;
  constructor(what: string, path: string, reason: string, cause?: unknown) {
    super('FILE_ACCESS', `${what} '${path}': ${reason}`, { cause });
    this.path = path;
  }
}

/**
 * A table, registry or page that contradicts itself (a name registered twice, a format whose layout does not
 * add up, a page element missing): a bug in kvpack, caught when the module loads or the page starts.
 */
export class DefinitionError extends KvpackError {
  constructor(message: string) {
    super('BAD_DEFINITION', message);
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

/** Something this platform cannot do (a browser has no file paths; synchronous reads need a Worker). */
export class PlatformError extends KvpackError {
  constructor(message: string) {
    super('PLATFORM', message);
  }
}
