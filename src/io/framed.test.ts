// One helper writes files atomically (temp file + rename) and one reads framed files (magic, version,
// header JSON, body, checksum); the cache file, lab manifest, reference logits and capture use them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { partialDir, publishDir, writeAtomic } from './atomic.js';
import { readFrame, writeFrame, type FrameSpec } from './framed.js';
import { FileFormatError } from '../errors.js';
import { fromRoot } from '../../test/paths.js';

const dir = mkdtempSync(join(tmpdir(), 'kvpack-io-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('writeAtomic: the file appears whole or not at all; a failed write leaves nothing beside the target', () => {
  const p = join(dir, 'a.bin');
  writeAtomic(p, new Uint8Array([1, 2, 3]));
  assert.deepEqual([...readFileSync(p)], [1, 2, 3]);
  writeAtomic(p, 'replaced');
  assert.equal(readFileSync(p, 'utf8'), 'replaced');
  assert.throws(() => writeAtomic(join(dir, 'no', 'such', 'dir', 'b.bin'), 'x'));
  assert.deepEqual(readdirSync(dir).sort(), ['a.bin']);
});

test('partialDir + publishDir: a directory is filled beside its target, then renamed into place whole', () => {
  const out = join(dir, 'run');
  const tmp = partialDir(out);
  assert.ok(existsSync(tmp) && tmp !== out && tmp.startsWith(`${out}.partial-`));
  assert.notEqual(partialDir(out), tmp, 'a second partial dir never reuses the first');
  writeFileSync(join(tmp, 'f'), 'y');
  assert.ok(!existsSync(out));
  publishDir(tmp, out);
  assert.equal(readFileSync(join(out, 'f'), 'utf8'), 'y');
  assert.ok(!existsSync(tmp));
});

const SPEC: FrameSpec = { kind: 'test file', magic: 'KVTEST01', versions: [1, 2], maxHeader: 1 << 10, pad: true, checksum: true };

test('framed files: round trip; wrong magic, version, header length, checksum and JSON are FileFormatErrors', () => {
  const body = new Uint8Array([9, 8, 7, 6, 5]);
  const bytes = writeFrame(SPEC, { a: 1, s: 'x' }, [body], 2);
  const r = readFrame<{ a: number }>(SPEC, bytes);
  assert.deepEqual([r.version, r.header.a, [...r.body]], [2, 1, [...body]]);
  assert.equal((8 + 4 + 4 + new DataView(bytes.buffer).getUint32(12, true)) % 4, 0, 'body 4-byte aligned');
  const bad = (edit: (b: Uint8Array) => Uint8Array, why: RegExp) =>
    assert.throws(
      () => readFrame(SPEC, edit(Uint8Array.from(bytes))),
      (e: unknown) => e instanceof FileFormatError && why.test(e.message),
    );
  bad((b) => (b.set([0x47], 0), b), /test file.*magic/);
  bad((b) => (new DataView(b.buffer).setUint32(8, 7, true), b), /version 7/);
  bad((b) => (new DataView(b.buffer).setUint32(12, 1 << 20, true), b), /header/);
  bad((b) => ((b[b.length - 40]! ^= 1), b), /checksum/);
  bad((b) => b.subarray(0, 10), /truncated/);
  assert.throws(() => writeFrame(SPEC, { big: 'x'.repeat(2000) }, [], 1), /header/);
});

test('no other module renames files or writes temp files itself', () => {
  const hits: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, name.name);
      if (name.isDirectory()) walk(p);
      else if (name.name.endsWith('.ts') && !name.name.endsWith('.test.ts') && !p.includes(`${join('src', 'io')}`)) {
        if (/renameSync|\.partial-\$\{|\.tmp-\$\{/.test(readFileSync(p, 'utf8'))) hits.push(p);
      }
    }
  };
  walk(fromRoot('src'));
  assert.deepEqual(hits, []);
});
