import { test } from 'node:test';
import assert from 'node:assert/strict';
import { packJob, packedLength, unpackJob } from './job-pack.js';
import type { AttendJob, RunPlan } from './attend-unit.js';

const run = (format: string, kernel: string, i: number, channel: boolean): RunPlan => ({
  format,
  kernel,
  addr: 1_000_000 + i * 4096,
  headStride: 9216 + i,
  first: i % 32,
  rowBytes: channel ? 0 : 36,
  table: channel ? 256 : 0,
});

test('an attention job survives packing into numbers and back, strings interned', () => {
  const segs = Array.from({ length: 130 }, (_, i) => ({
    start: i * 256,
    count: 256,
    read: i % 3,
    k: run('q2c_0', 'q2c_0:scores:f32:wasm', i, true),
    v: run('q4_0', 'q4_0:accumulate:int16:wasm', i, false),
  }));
  const job: AttendJob = {
    D: 64,
    G: 3,
    kvHeads: 4,
    nq: 1,
    qc: 21,
    splits: 2,
    split0: 3,
    chunk: 512,
    q: 64,
    qi: 0,
    qd: 0,
    lohi: 128,
    softcap: 30.5,
    part: 4096,
    slotBytes: 832,
    units: 8,
    segs,
  };
  const nums = new Float64Array(packedLength(segs.length));
  const strings = packJob(job, nums);
  assert.deepEqual(unpackJob(nums, strings), job);
  assert.ok(strings.length <= 4, `distinct strings only: ${strings.join(',')}`);
  // A stale or oversized segment count never reads past the buffer.
  nums[15] = 1e9;
  assert.equal(unpackJob(nums, strings).segs.length, segs.length);
});
