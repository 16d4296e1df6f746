// Typed errors: each kind of failure its own class and code, one code convention, causes passed through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as errors from './errors.js';
import { getFormat } from './formats/registry.js';
import { schemePolicy } from './cache/schemes.js';
import { getArchitecture } from './model/arch/registry.js';
import { getProtocol } from './lab/protocol.js';
import { getPreTokenizer } from './model/tokenizer/pretokenize.js';
import { loadVocab } from './model/tokenizer/vocab.js';
import { fromRoot } from '../test/paths.js';
import { sourceFiles } from '../test/source-files.js';

test('an unknown name throws the error of its registry: format, scheme, architecture, protocol, tokenizer', () => {
  const cases: [() => unknown, new (...a: never[]) => errors.KvpackError, string][] = [
    [() => getFormat('q9_9'), errors.UnknownFormatError, 'UNKNOWN_FORMAT'],
    [() => schemePolicy('q9'), errors.UnknownSchemeError, 'UNKNOWN_SCHEME'],
    [() => getArchitecture('mamba'), errors.UnknownArchitectureError, 'UNKNOWN_ARCHITECTURE'],
    [() => getProtocol('no-such-protocol'), errors.UnknownProtocolError, 'UNKNOWN_PROTOCOL'],
    [() => getPreTokenizer('no-such-pre'), errors.UnknownTokenizerError, 'UNKNOWN_TOKENIZER'],
    [
      () =>
        loadVocab(
          new Map<string, unknown>([
            ['tokenizer.ggml.model', 'bert'],
            ['tokenizer.ggml.tokens', ['a']],
          ]) as never,
        ),
      errors.UnknownTokenizerError,
      'UNKNOWN_TOKENIZER',
    ],
  ];
  for (const [fn, cls, code] of cases) {
    assert.throws(fn, (e: unknown) => e instanceof cls && e instanceof errors.UnknownNameError && (e as errors.KvpackError).code === code, cls.name);
    if (cls !== errors.UnknownFormatError)
      assert.throws(fn, (e: unknown) => !(e instanceof errors.UnknownFormatError), `${cls.name} is not an UnknownFormatError`);
  }
});

test('error codes follow one convention: UPPER_SNAKE words, no E_ prefix; each error class has its own code', () => {
  const codes = new Map<string, string>();
  for (const file of sourceFiles('src', false)) {
    const text = readFileSync(fromRoot(file), 'utf8');
    for (const m of text.matchAll(/(?:new KvpackError|super)\(\s*'([^']*)'/g)) codes.set(m[1]!, file);
  }
  assert.ok(codes.size >= 10, `found only ${[...codes.keys()].join(', ')}`);
  for (const [code, file] of codes) {
    assert.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/, `${file}: '${code}'`);
    assert.doesNotMatch(code, /^E_/, `${file}: '${code}' uses the E_ prefix`);
  }
  const byClass = new Map<string, string>();
  for (const [name, cls] of Object.entries(errors)) {
    if (typeof cls !== 'function' || !(cls.prototype instanceof errors.KvpackError)) continue;
    const src = cls.toString().match(/super\(\s*'([^']*)'/);
    if (!src) continue;
    assert.ok(!byClass.has(src[1]!), `${name} and ${byClass.get(src[1]!)} share the code ${src[1]}`);
    byClass.set(src[1]!, name);
  }
});

/**
 * Plain `throw new Error(` left in library code (src/ without tests and src/cli, the one place that exits),
 * per file. Empty now: a new plain throw fails the test below; a row here must say why it cannot be typed.
 */
const PLAIN_THROWS_LEFT: Record<string, number> = {};

const PLAIN_THROW = /\bthrow\s+(?:new\s+)?Error\s*\(/g;

test('library code throws KvpackError subclasses: no plain Error beyond the allowlist, and no stale allowlist row', () => {
  // Negative control: the pattern sees both spellings of a plain throw and not a subclass.
  assert.equal('throw new Error(x); throw Error(y); throw new ArgumentError(z);'.match(PLAIN_THROW)?.length, 2);
  const found: Record<string, number> = {};
  for (const rel of sourceFiles('src', false)) {
    if (rel.startsWith('src/cli/')) continue;
    const n = [...readFileSync(fromRoot(rel), 'utf8').matchAll(PLAIN_THROW)].length;
    if (n) found[rel] = n;
  }
  const over = Object.entries(found)
    .filter(([f, n]) => n > (PLAIN_THROWS_LEFT[f] ?? 0))
    .map(([f, n]) => `${f}: ${n} plain throw(s), allowed ${PLAIN_THROWS_LEFT[f] ?? 0}`);
  assert.deepEqual(over, [], 'throw a KvpackError subclass (src/errors.ts) instead');
  const stale = Object.entries(PLAIN_THROWS_LEFT)
    .filter(([f, n]) => (found[f] ?? 0) < n)
    .map(([f, n]) => `${f}: allowed ${n}, has ${found[f] ?? 0}`);
  assert.deepEqual(stale, [], 'lower or delete these PLAIN_THROWS_LEFT rows');
});
