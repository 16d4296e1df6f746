// The relaxed-SIMD probe: the same module with a baseline op validates, so a false answer means the engine
// lacks relaxed SIMD, not that the probe is malformed; Node 20's V8 validates it only behind its flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RELAXED_SIMD_PROBE, SIMD_PROBE, hasRelaxedSimd } from './features.js';

test('features: the probe module is valid with a baseline SIMD op', () => {
  assert.equal(WebAssembly.validate(SIMD_PROBE), true);
  assert.equal(WebAssembly.validate(RELAXED_SIMD_PROBE.subarray(0, 20)), false);
});

test('features: relaxed SIMD is detected where V8 enables it', () => {
  if (hasRelaxedSimd()) return; // a newer V8 ships it by default (and may no longer know the flag)
  const here = fileURLToPath(new URL('./features.js', import.meta.url));
  const probe = `import('${here}').then((m) => console.log(m.hasRelaxedSimd()))`;
  const flagged = spawnSync(process.execPath, ['--experimental-wasm-relaxed-simd', '-e', probe], { encoding: 'utf8' });
  assert.equal(flagged.stdout.trim(), 'true', flagged.stderr);
});
