// Reference dequantization of GGUF weight tensors to float32, bit-exact with ggml's dequantize_row_*.
// Types that are also kvpack KV formats decode through the format's own decodeBlock (one definition);
// the K-quants, which exist only as weights, decode in gguf/kquants.ts (table.ts says which).
import { FileFormatError } from '../../errors.js';
import { blockDecoderOf, WEIGHT_TYPES } from './table.js';
import { GGML, ggmlType, ggmlTypeName } from '../../gguf/types.js';

// Which types decode, and how: the weight-type table (kernels/matmul/table.ts).
const decoderFor = blockDecoderOf;

/** ggml type ids this build can dequantize right now. */
export function dequantTypes(): number[] {
  return WEIGHT_TYPES.map((r) => r.type)
    .filter((id) => decoderFor(id) !== undefined)
    .sort((a, b) => a - b);
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
