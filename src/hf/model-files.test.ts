// The loader reads a directory only through ModelFiles: an in-memory copy of a sharded directory loads the
// same model as its path, the files it opens are exactly the ones a server offers (isHfModelFile), and
// the directory views a page builds (picked folder, served listing) name the files the loader expects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArgumentError, FileFormatError } from '../errors.js';
import { writeHfDir } from '../../test/fixtures/hf-dir.js';
import { dirFiles } from './dir-files.js';
import { loadHfModel } from './load.js';
import { isHfModelFile, memoryFiles, readJson, type ModelFiles } from './model-files.js';
import { spmFixture } from '../../test/fixtures/hf-tokenizer.js';
import { blobFiles, urlFiles } from './web-files.js';

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-files-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `files` with every open recorded. */
function recording(files: ModelFiles): { files: ModelFiles; opened: Set<string> } {
  const opened = new Set<string>();
  return { files: { ...files, open: (f) => (opened.add(f), files.open(f)) }, opened };
}

test('ModelFiles: an in-memory copy of a sharded directory loads the model its path does', () =>
  withDir((root) => {
    const dir = join(root, 'tiny-llama');
    writeHfDir(dir, 'llama', { shards: 2, dtype: 'BF16' });
    const fromPath = loadHfModel(dir);
    const bytes = Object.fromEntries(readdirSync(dir).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))]));
    const fromMemory = loadHfModel(memoryFiles(bytes, 'tiny-llama'));
    assert.deepEqual([...fromMemory.metadata], [...fromPath.metadata]);
    assert.equal(fromMemory.metadata.get('general.name')?.value, 'tiny-llama');
    assert.deepEqual([...fromMemory.tensors.keys()], [...fromPath.tensors.keys()]);
    for (const [name, t] of fromPath.tensors) {
      const m = fromMemory.tensors.get(name)!;
      assert.deepEqual([m.type, m.dims], [t.type, t.dims], name);
      assert.ok(Buffer.from(m.data).equals(Buffer.from(t.data)), `${name}: bytes`);
    }
  }));

test('ModelFiles: the loader opens only files a server offers (isHfModelFile), never the rest', () =>
  withDir((dir) => {
    writeHfDir(dir, 'llama', { shards: 2 });
    const tok = spmFixture({ kind: 'llama2', merges: 10, specials: [] });
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok.tokenizer));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tok.tokenizerConfig));
    writeFileSync(join(dir, 'generation_config.json'), '{}');
    writeFileSync(join(dir, 'chat_template.jinja'), '{{ messages }}');
    for (const other of ['README.md', 'pytorch_model.bin', '.gitattributes']) writeFileSync(join(dir, other), 'not read');
    const { files, opened: all } = recording(dirFiles(dir));
    loadHfModel(files);
    assert.ok(all.has('model.safetensors.index.json') && all.has('chat_template.jinja') && all.has('tokenizer_config.json'), [...all].join(', '));
    assert.ok(all.has('model-00001-of-00002.safetensors') && all.has('model-00002-of-00002.safetensors'));
    for (const f of all) assert.ok(isHfModelFile(f), `the loader read '${f}', which a server would not offer`);
    for (const f of ['README.md', 'pytorch_model.bin', '.gitattributes']) {
      assert.equal(all.has(f), false, f);
      assert.equal(isHfModelFile(f), false, f);
    }
  }));

test('dirFiles: regular files and links to them, no subdirectories; errors name the path', () =>
  withDir((base) => {
    const dir = join(base, 'model');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'config.json'), '{"a": 1}');
    writeFileSync(join(base, 'outside.json'), '[]');
    symlinkSync(join(base, 'outside.json'), join(dir, 'linked.json'));
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling.json'));
    const files = dirFiles(dir);
    assert.deepEqual([...files.names].sort(), ['config.json', 'linked.json']);
    assert.equal(files.name, 'model');
    assert.deepEqual(readJson(files, 'config.json'), { a: 1 });
    assert.throws(
      () => files.open('sub'),
      (e: unknown) => e instanceof FileFormatError && e.message === `hf: ${join(dir, 'sub')}: missing`,
    );
    writeFileSync(join(dir, 'bad.json'), '{');
    assert.throws(() => readJson(dirFiles(dir), 'bad.json'), /bad\.json: not valid JSON \(/);
    assert.throws(
      () => dirFiles(join(dir, 'absent')),
      (e: unknown) => e instanceof ArgumentError && /absent: no such directory$/.test(e.message),
    );
  }));

test("blobFiles: a picked folder's top-level files by name, loose files as they are, duplicates refused", () => {
  const b = (s: string) => new Blob([s]);
  const folder = blobFiles([
    { path: 'tinystories/config.json', file: b('{}') },
    { path: 'tinystories/model.safetensors', file: b('x') },
    { path: 'tinystories/sub/model.safetensors', file: b('nested') },
  ]);
  assert.equal(folder.name, 'tinystories');
  assert.deepEqual(folder.names, ['config.json', 'model.safetensors']);
  assert.equal(folder.locate('config.json'), 'tinystories/config.json');
  assert.throws(() => folder.open('tokenizer.json'), /tinystories\/tokenizer\.json: missing/);
  const loose = blobFiles(
    [
      { path: 'config.json', file: b('{}') },
      { path: 'model.safetensors', file: b('x') },
    ],
    'my model',
  );
  assert.deepEqual([loose.name, loose.names], ['my model', ['config.json', 'model.safetensors']]);
  assert.throws(
    () =>
      blobFiles([
        { path: 'config.json', file: b('') },
        { path: 'config.json', file: b('') },
      ]),
    (e: unknown) => e instanceof ArgumentError && /'config\.json' was picked twice/.test(e.message),
  );
  assert.throws(() => blobFiles([]), /no files were picked/);
});

test("urlFiles: the listing's names under the directory URL", () => {
  const d = urlFiles(
    'models/tiny/',
    [
      { name: 'config.json', size: 2 },
      { name: 'model.safetensors', size: 10 },
    ],
    'tiny',
  );
  assert.deepEqual([d.name, d.location, d.names], ['tiny', 'models/tiny/', ['config.json', 'model.safetensors']]);
  assert.equal(d.locate('model.safetensors'), 'models/tiny/model.safetensors');
  assert.throws(() => d.open('tokenizer.json'), /models\/tiny\/tokenizer\.json: missing/);
  assert.throws(() => urlFiles('models/tiny', [], 'tiny'), /ends in '\/'/);
});
