// Reference dequantization of GGUF weight tensors to float32, bit-exact with ggml's dequantize_row_*.
// Types that are also kvpack KV formats decode through the format's own decodeBlock (one definition);
// the K-quants, which exist only as weights, decode in kquants.ts.
import { FileFormatError } from '../errors.js';
import type { KvFormat } from '../formats/format.js';
import { formats } from '../formats/registry.js';
import { decodeQ4K, decodeQ5K, decodeQ6K } from './kquants.js';
import { GGML, ggmlType, ggmlTypeName } from './types.js';

type BlockDecoder = (src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number) => void;

/** Weight types whose bytes equal a registered KV format's (looked up at call time, by ggml name). */
const VIA_FORMAT: readonly number[] = [GGML.F32, GGML.F16, GGML.BF16, GGML.Q8_0, GGML.Q4_0, GGML.Q4_1, GGML.Q5_0, GGML.Q5_1, GGML.IQ4_NL];

const K_QUANTS: ReadonlyMap<number, BlockDecoder> = new Map([
  [GGML.Q4_K, decodeQ4K],
  [GGML.Q5_K, decodeQ5K],
  [GGML.Q6_K, decodeQ6K],
]);

/** The registered format whose bytes are this ggml type's, or undefined (not yet registered). */
function formatFor(typeId: number): KvFormat | undefined {
  const t = ggmlType(typeId);
  const f = t && formats.get(t.name);
  // Both checks guard against a same-named format whose bytes differ from ggml's.
  if (!f || f.ggmlType !== typeId || f.blockValues !== t.blockValues || f.blockBytes !== t.blockBytes) return undefined;
  return f;
}

function decoderFor(typeId: number): BlockDecoder | undefined {
  const k = K_QUANTS.get(typeId);
  if (k) return k;
  if (!VIA_FORMAT.includes(typeId)) return undefined;
  const f = formatFor(typeId);
  return f ? (src, so, dst, doff) => f.decodeBlock(src, so, dst, doff) : undefined;
}

/** ggml type ids this build can dequantize right now. */
export function dequantTypes(): number[] {
  return [...VIA_FORMAT, ...K_QUANTS.keys()].filter((id) => decoderFor(id) !== undefined).sort((a, b) => a - b);
}

export function canDequantize(typeId: number): boolean {
  return decoderFor(typeId) !== undefined;
}

/**
 * Dequantizes `elements` values of type `typeId` from `data` (a whole number of blocks).
 * `name` is the tensor's name, used in the error for an unsupported type.
 */
export function dequantize(typeId: number, data: Uint8Array, elements: number, name = '<tensor>'): Float32Array {
  const t = ggmlType(typeId);
  const decode = decoderFor(typeId);
  if (!t || !decode) {
    const supported = dequantTypes().map(ggmlTypeName).join(', ');
    throw new FileFormatError('gguf', `tensor '${name}': weight type ${t?.name ?? 'unknown'} (id ${typeId}) is not supported (supported: ${supported})`);
  }
  if (elements % t.blockValues !== 0) {
    throw new FileFormatError('gguf', `tensor '${name}': ${elements} values is not a whole number of ${t.name} blocks of ${t.blockValues}`);
  }
  const blocks = elements / t.blockValues;
  if (data.length !== blocks * t.blockBytes) {
    throw new FileFormatError('gguf', `tensor '${name}': ${t.name} data is ${data.length} B, ${elements} values need ${blocks * t.blockBytes} B`);
  }
  // f32 is the bytes themselves (little-endian hosts): one aligned copy.
  if (typeId === GGML.F32) return new Float32Array(data.slice().buffer);
  const out = new Float32Array(elements);
  for (let b = 0; b < blocks; b++) decode(data, b * t.blockBytes, out, b * t.blockValues);
  return out;
}

/** Dequantizes a whole tensor described by a GGUF tensor info (or any {name, type, dims}). */
export function dequantizeTensor(info: { name: string; type: number; dims: readonly number[] }, data: Uint8Array): Float32Array {
  const elements = info.dims.reduce((s, d) => s * d, 1);
  return dequantize(info.type, data, elements, info.name);
}
