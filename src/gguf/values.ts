// GGUF metadata values: the 13 wire types (gguf.md "gguf_metadata_value_type") and their TS forms.

/** Wire ids of GGUF metadata value types. */
export const GGUF_TYPE = Object.freeze({
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
});

export type GgufNumberType = 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64';
export type GgufBigType = 'u64' | 'i64';
/** Types an array may hold (nested arrays are refused, as llama.cpp does). */
export type GgufItemType = GgufNumberType | GgufBigType | 'bool' | 'string';

/** Typed storage of each array item type: typed arrays keep 262k-entry vocab scores compact. */
export interface GgufArrayItems {
  u8: Uint8Array;
  i8: Int8Array;
  u16: Uint16Array;
  i16: Int16Array;
  u32: Uint32Array;
  i32: Int32Array;
  f32: Float32Array;
  f64: Float64Array;
  u64: BigUint64Array;
  i64: BigInt64Array;
  bool: boolean[];
  string: string[];
}

export type GgufArray = { [K in GgufItemType]: { type: 'array'; itemType: K; value: GgufArrayItems[K] } }[GgufItemType];

/** One metadata value with its wire type kept, so a file round-trips and getters can check types. */
export type GgufValue =
  | { type: GgufNumberType; value: number }
  | { type: GgufBigType; value: bigint }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | GgufArray;

export type GgufValueType = GgufValue['type'];

/** Byte size of fixed-size item types on the wire (strings are 8-byte length + bytes). */
export const GGUF_ITEM_BYTES: Readonly<Record<Exclude<GgufItemType, 'string'>, number>> = Object.freeze({
  u8: 1,
  i8: 1,
  u16: 2,
  i16: 2,
  u32: 4,
  i32: 4,
  f32: 4,
  bool: 1,
  u64: 8,
  i64: 8,
  f64: 8,
});

/** Wire id -> type name; undefined for ids the spec does not define. */
export function ggufTypeName(id: number): GgufValueType | undefined {
  for (const [name, wire] of Object.entries(GGUF_TYPE)) if (wire === id) return name as GgufValueType;
  return undefined;
}

/** Constructors for writing metadata: `gv.u32(64)`, `gv.strings(['a'])`, `gv.f32s([0, 1])`. */
export const gv = Object.freeze({
  u8: (value: number): GgufValue => ({ type: 'u8', value }),
  i8: (value: number): GgufValue => ({ type: 'i8', value }),
  u16: (value: number): GgufValue => ({ type: 'u16', value }),
  i16: (value: number): GgufValue => ({ type: 'i16', value }),
  u32: (value: number): GgufValue => ({ type: 'u32', value }),
  i32: (value: number): GgufValue => ({ type: 'i32', value }),
  f32: (value: number): GgufValue => ({ type: 'f32', value }),
  f64: (value: number): GgufValue => ({ type: 'f64', value }),
  u64: (value: bigint): GgufValue => ({ type: 'u64', value }),
  i64: (value: bigint): GgufValue => ({ type: 'i64', value }),
  bool: (value: boolean): GgufValue => ({ type: 'bool', value }),
  str: (value: string): GgufValue => ({ type: 'string', value }),
  strings: (value: string[]): GgufValue => ({ type: 'array', itemType: 'string', value }),
  f32s: (value: ArrayLike<number>): GgufValue => ({ type: 'array', itemType: 'f32', value: Float32Array.from(value) }),
  i32s: (value: ArrayLike<number>): GgufValue => ({ type: 'array', itemType: 'i32', value: Int32Array.from(value) }),
  u32s: (value: ArrayLike<number>): GgufValue => ({ type: 'array', itemType: 'u32', value: Uint32Array.from(value) }),
});
