import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from './arena.js';
import { instantiateOver, wasmKernels, wasmFailure } from './wasm.js';
import { KernelError } from '../../errors.js';

const STATIC_AT = 1024;
const STATIC_LEN = 64;

/**
 * A hand-assembled module with static data, as a kernel module holding a constant table would have: 64 bytes
 * of 0xab at 1024 (an active segment over the imported shared memory) and heapBase() = 1088.
 */
function moduleWithStaticData(): WebAssembly.Module {
  const end = STATIC_AT + STATIC_LEN; // 1088 = i32 LEB 0xc0 0x08
  assert.equal(end, 1088);
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...[0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f], // type: () -> i32
    // import env.memory: shared, min 1, max 65536 pages
    ...[0x02, 0x12, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x03, 0x01, 0x80, 0x80, 0x04],
    ...[0x03, 0x02, 0x01, 0x00], // one function of type 0
    ...[0x07, 0x0c, 0x01, 0x08, ...[...'heapBase'].map((c) => c.charCodeAt(0)), 0x00, 0x00],
    ...[0x0a, 0x07, 0x01, 0x05, 0x00, 0x41, 0xc0, 0x08, 0x0b], // heapBase() { return 1088 }
    // data: active segment at i32.const 1024, 64 bytes of 0xab
    ...[0x0b, 0x47, 0x01, 0x00, 0x41, 0x80, 0x08, 0x0b, STATIC_LEN, ...new Array<number>(STATIC_LEN).fill(0xab)],
  ];
  return new WebAssembly.Module(new Uint8Array(bytes));
}

test('arena: reserveStatic keeps allocations past the static data, aligned', () => {
  const a = new Arena(1, 1024, 1 << 20);
  a.reserveStatic(1100);
  const off = a.alloc(10);
  assert.ok(off >= 1100, `first allocation at ${off}, inside the static data`);
  assert.equal(off % 64, 0);
});

test('arena: reserveStatic refuses when an allocation already lies below the static end, and drops holes there', () => {
  const a = new Arena(1, 1024, 1 << 20);
  const low = a.alloc(64);
  assert.throws(() => a.reserveStatic(2048), KernelError);
  a.free(low); // a hole at 1024 now
  a.reserveStatic(2048);
  assert.ok(a.alloc(64) >= 2048, 'a freed hole below the static end was handed out again');
});

test("arena: instantiating a module over it keeps the module's static data intact (scratch lands past heapBase)", () => {
  const arena = new Arena(16, 1024, 64 << 20);
  const k = instantiateOver(arena, 99, moduleWithStaticData());
  const data = new Uint8Array(arena.memory.buffer, STATIC_AT, STATIC_LEN);
  assert.ok(
    data.every((b) => b === 0xab),
    'the static data was overwritten by the arena (scratch zero-filled over it)',
  );
  assert.ok(k.tile >= STATIC_AT + STATIC_LEN && k.stage >= STATIC_AT + STATIC_LEN);
});

test("arena: the kernel module's scratch lies past its own heapBase", (t) => {
  const k = wasmKernels();
  if (!k) return t.skip(`wasm kernels unavailable: ${wasmFailure()}`);
  const base = k.exports.heapBase();
  assert.ok(base > 0 && k.tile >= base && k.stage >= base, `heapBase ${base}, tile ${k.tile}, stage ${k.stage}`);
});

test('arena: every allocation reads as zero, whether it reuses freed bytes or takes fresh ones', () => {
  const a = new Arena(1);
  const rng = (() => {
    let x = 12345;
    return () => (x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32;
  })();
  const live: number[] = [];
  for (let i = 0; i < 400; i++) {
    if (live.length > 0 && rng() < 0.45) {
      a.free(live.splice(Math.floor(rng() * live.length), 1)[0]!);
      continue;
    }
    const bytes = 1 + Math.floor(rng() * 70000);
    const off = a.alloc(bytes);
    const u8 = new Uint8Array(a.memory.buffer, off, Arena.sizeOf(bytes));
    assert.ok(
      u8.every((b) => b === 0),
      `allocation ${i} (${bytes} B at ${off}) holds old bytes`,
    );
    u8.fill(0xa5);
    live.push(off);
  }
});
