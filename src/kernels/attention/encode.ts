// encodeRows(): quantize-on-append for one kv head, the entry point the cache calls. Routed through the
// kernel registry: the wasm encoder when dst is arena memory (JS inputs are staged), else the reference.
import type { KvFormat } from '../../formats/format.js';
import { formats } from '../../formats/registry.js';
import { lookupKernel, registryVersion, type EncodeKernel } from './registry.js';
import { refKernel } from './ref-ops.js';

const unregistered = new WeakMap<KvFormat, EncodeKernel>();
/** The encoder each registered format resolved to, valid while the registry version is unchanged. */
const resolved = new WeakMap<KvFormat, { version: number; fn: EncodeKernel }>();

/**
 * Encodes `tokens` tokens of one head: src row t starts at srcOff + t*srcStride (headDim values).
 * Token axis: writes tokens * rowBytes(format, headDim) bytes (rows padded to whole blocks).
 * Channel axis: tokens must equal blockValues (one whole group); writes headDim blocks, channel order.
 * Output bytes are identical whichever kernel runs (the gate checks it).
 */
export function encodeRows(
  format: KvFormat,
  src: Float32Array,
  srcOff: number,
  srcStride: number,
  tokens: number,
  headDim: number,
  dst: Uint8Array,
  dstOff: number,
): void {
  encoderFor(format)(src, srcOff, srcStride, tokens, headDim, dst, dstOff);
}

/** The encoder encodeRows would call for this format now: callers encoding many heads look it up once. */
export function encoderFor(format: KvFormat): EncodeKernel {
  // Formats built outside the registry (tests, experiments) use their own reference encoder.
  if (formats.get(format.id) === format) {
    const r = resolved.get(format);
    if (r && r.version === registryVersion()) return r.fn;
    const fn = lookupKernel(format.id, 'encode').fn;
    resolved.set(format, { version: registryVersion(), fn });
    return fn;
  }
  let k = unregistered.get(format);
  if (!k) unregistered.set(format, (k = refKernel(format, 'encode')));
  return k;
}
