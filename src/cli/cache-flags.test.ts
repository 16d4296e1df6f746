import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attentionFromFlags, policyFromFlags } from './cache-flags.js';

test('--attn-q / --attn-v name the attention accuracy choices; anything else is a clear error', () => {
  assert.deepEqual(attentionFromFlags({}), { q: undefined, v: undefined });
  assert.deepEqual(attentionFromFlags({ attnQ: 'int8', attnV: 'int16' }), { q: 'int8', v: 'int16' });
  assert.throws(() => attentionFromFlags({ attnQ: 'int4' }), /--attn-q must be one of f32, int8, int16, got 'int4'/);
  assert.throws(() => attentionFromFlags({ attnV: 'int8' }), /--attn-v must be one of f32, int16, got 'int8'/);
});

test('--kv and --cache-type-k/v do not combine', () => {
  assert.throws(() => policyFromFlags({ kv: 'q4_0', cacheTypeK: 'q8_0' }), /do not combine/);
  assert.deepEqual(policyFromFlags({ cacheTypeK: 'q8_0' }), { k: 'q8_0', v: 'f16' });
});
