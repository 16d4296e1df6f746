// tern_g32/g8/g4 (src/formats/tern.ts): 32 ternary codes per block, 32/g f16 scales, then 7 bytes of base-3
// digits (byte i = sum t_(5i+k) 3^k): the exact dequantizer (x = (code - 1) * s, the reference's product)
// for the tiled kernels (tiled.ts), which decode a tile of rows and run the shared G-head dots / sums.
import { halfToFloat } from '../shared/common';

const QK = 32;

/** nb blocks -> nb * 32 f32. Digits come digit by digit (byte % 3, byte / 3), so bytes >= 243 decode as the reference. */
@inline export function ternBlocks(src: usize, nb: i32, dst: usize, g: i32): void {
  const sets = QK / g;
  const bb = <usize>(2 * sets + 7);
  for (let ib = 0; ib < nb; ib++) {
    const p = src + <usize>ib * bb;
    const o = dst + (<usize>ib << 7);
    const qt = p + (<usize>sets << 1);
    for (let i = 0; i < 7; i++) {
      let byte = <u32>load<u8>(qt + <usize>i);
      const n = i < 6 ? 5 : 2;
      for (let k = 0; k < n; k++) {
        const j = 5 * i + k;
        const s = halfToFloat(load<u16>(p + (<usize>(j / g) << 1)));
        // (code - 1) * s with s from the f16: 0 * s keeps -0 and NaN as the reference's float product.
        store<f32>(o + (<usize>j << 2), <f32>(<i32>(byte % 3) - 1) * s);
        byte /= 3;
      }
    }
  }
}
