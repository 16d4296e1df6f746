// Hugging Face directories that cannot load are one typed error each, naming the file and the key or
// tensor: bad shard indexes, unknown classes, settings the engine does not run, missing or stray tensors.
// Also: llama 3 RoPE factors, and what `-m` treats as a directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileFormatError, UnknownFormatError } from '../errors.js';
import { HfConfig } from './config.js';
import { llama3RopeFactors } from './arch/llama.js';
import { isHfDir, loadHfModel } from './load.js';
import { writeHfDir, type HfDirOptions } from '../../test/fixtures/hf-dir.js';
import type { TinyArch } from '../../test/fixtures/arch-tensors.js';
import { encodeSafetensors } from '../../test/fixtures/safetensors-writer.js';

function withHfDir(arch: TinyArch, o: HfDirOptions, fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-bad-'));
  try {
    writeHfDir(dir, arch, o);
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
const editJson = (path: string, edit: (j: Record<string, unknown>) => void) => {
  const j = json(path);
  edit(j);
  writeFileSync(path, JSON.stringify(j));
};
const fails = (dir: string, pattern: RegExp, type: new (...a: never[]) => Error = FileFormatError) =>
  assert.throws(
    () => loadHfModel(dir),
    (e: unknown) => e instanceof type && pattern.test(e.message),
    String(pattern),
  );

test('sharded checkpoints: the index must agree with its shards', () => {
  withHfDir('llama', { shards: 2 }, (dir) => {
    const index = join(dir, 'model.safetensors.index.json');
    const original = readFileSync(index, 'utf8');
    const reset = () => writeFileSync(index, original);
    const first = 'model-00001-of-00002.safetensors';
    const second = 'model-00002-of-00002.safetensors';
    editJson(index, (j) => {
      (j['weight_map'] as Record<string, string>)['model.norm.weight'] = '../model.safetensors';
    });
    fails(dir, /is not a \.safetensors file name in the directory/);
    reset();
    const wm = json(index)['weight_map'] as Record<string, string>;
    const [name, file] = Object.entries(wm)[0]!;
    editJson(index, (j) => {
      (j['weight_map'] as Record<string, string>)[name] = file === first ? second : first;
    });
    fails(dir, new RegExp(`tensor '${name.replace(/\./g, '\\.')}' is listed in '.*' but is in '${file}'`));
    reset();
    editJson(index, (j) => {
      (j['weight_map'] as Record<string, string>)['model.ghost.weight'] = first;
    });
    fails(dir, /'model\.ghost\.weight' is listed in .* but is in no shard/);
    reset();
    renameSync(join(dir, second), join(dir, 'gone'));
    fails(dir, new RegExp(`shard '${second}' does not exist`));
    // A tensor present in two shards: the second shard also holds a copy of one of the first's.
    writeFileSync(join(dir, second), readFileSync(join(dir, first)));
    fails(dir, /is in both/);
    writeFileSync(index, '{"weight_map": ');
    fails(dir, /index\.json: not valid JSON/);
    unlinkSync(index);
    fails(dir, /no model\.safetensors or model\.safetensors\.index\.json/);
  });
});

test('config errors name the key: unknown class, activation, RoPE scaling, sizes', () => {
  withHfDir('llama', {}, (dir) => {
    const cfg = join(dir, 'config.json');
    const original = readFileSync(cfg, 'utf8');
    const with_ = (edit: (j: Record<string, unknown>) => void, pattern: RegExp, type?: new (...a: never[]) => Error) => {
      writeFileSync(cfg, original);
      editJson(cfg, edit);
      fails(dir, pattern, type);
    };
    with_(
      (j) => {
        j['architectures'] = ['MambaForCausalLM'];
      },
      /unknown Hugging Face architecture 'MambaForCausalLM' \(known: LlamaForCausalLM, /,
      UnknownFormatError,
    );
    with_((j) => {
      delete j['architectures'];
    }, /'architectures' must list the model class/);
    with_((j) => {
      j['hidden_act'] = 'gelu';
    }, /'hidden_act' 'gelu' is not supported for llama \(supported: silu\)/);
    with_((j) => {
      j['rope_scaling'] = { rope_type: 'dynamic', factor: 2 };
    }, /'rope_scaling' type 'dynamic' is not supported/);
    with_((j) => {
      delete j['hidden_size'];
    }, /'hidden_size' is missing/);
    with_((j) => {
      j['num_key_value_heads'] = 3;
    }, /'num_key_value_heads' 3 does not divide num_attention_heads 4/);
    with_((j) => {
      j['intermediate_size'] = 'big';
    }, /'intermediate_size' must be a positive integer/);
    with_((j) => {
      j['num_hidden_layers'] = 2;
    }, /'model\.layers\.2\..*' is past num_hidden_layers 2/);
    with_((j) => {
      j['num_hidden_layers'] = 4;
    }, /missing tensor for 'blk\.3\.attn_norm\.weight'/);
    writeFileSync(cfg, '{ nope');
    fails(dir, /config\.json: not valid JSON/);
  });
});

test('tensors: an unknown one is an error, a missing lm_head when untied is an error', () => {
  withHfDir('qwen3', {}, (dir) => {
    writeFileSync(
      join(dir, 'model.safetensors'),
      encodeSafetensors([{ name: 'model.layers.0.mlp.experts.0.weight', dtype: 'F32', shape: [1], data: new Uint8Array(4) }]),
    );
    fails(dir, /tensor 'model\.layers\.0\.mlp\.experts\.0\.weight' has no place in a qwen3 model/);
  });
  withHfDir('qwen3', {}, (dir) => {
    // qwen3's fixture has a separate lm_head; drop it from the file.
    const cfg = join(dir, 'config.json');
    editJson(cfg, (j) => {
      j['tie_word_embeddings'] = false;
    });
    const path = join(dir, 'model.safetensors');
    const bytes = readFileSync(path);
    const len = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.subarray(8, 8 + len).toString('utf8')) as Record<string, unknown>;
    delete header['lm_head.weight'];
    const text = Buffer.from(JSON.stringify(header));
    const out = Buffer.alloc(8 + text.length + bytes.length - 8 - len);
    out.writeBigUInt64LE(BigInt(text.length));
    text.copy(out, 8);
    bytes.copy(out, 8 + text.length, 8 + len);
    writeFileSync(path, out);
    fails(dir, /no lm_head\.weight although tie_word_embeddings is false/);
  });
});

test('gemma3: a query_pre_attn_scalar the engine would not use is refused', () => {
  withHfDir('gemma3', {}, (dir) => {
    editJson(join(dir, 'config.json'), (j) => {
      j['query_pre_attn_scalar'] = 17;
    });
    fails(dir, /'query_pre_attn_scalar' 17 differs from the 32 the engine derives/);
  });
});

test('llama 3 RoPE factors: 1 for short wavelengths, the factor for long ones, a monotone blend between', () => {
  const c = HfConfig.of(
    {
      hidden_size: 4096,
      num_attention_heads: 32,
      rope_theta: 500000,
      rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    },
    'LlamaForCausalLM',
  );
  const f = llama3RopeFactors(c)!;
  assert.equal(f.length, 64);
  assert.equal(f[0], 1);
  assert.equal(f[63], 8);
  for (let i = 1; i < 64; i++) assert.ok(f[i]! >= f[i - 1]!, `monotone at ${i}`);
  assert.ok(
    f.some((x) => x > 1 && x < 8),
    'a blended band',
  );
  assert.equal(llama3RopeFactors(HfConfig.of({ hidden_size: 64, num_attention_heads: 4 }, 'LlamaForCausalLM')), undefined);
});

test('isHfDir: files and missing paths are not (the file loaders name those errors), directories need config.json', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-hf-is-'));
  try {
    const file = join(dir, 'x.gguf');
    writeFileSync(file, 'x');
    assert.equal(isHfDir(file), false);
    assert.throws(
      () => isHfDir(dir),
      (e: unknown) => e instanceof FileFormatError && /without config\.json/.test(e.message),
    );
    assert.equal(isHfDir(join(dir, 'nope')), false);
    writeFileSync(join(dir, 'config.json'), '{}');
    assert.equal(isHfDir(dir), true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
