// StopMatcher: a stop string split across pieces is still caught, and nothing of it is ever emitted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StopMatcher } from './stop.js';

function run(stops: string[], pieces: string[]): { out: string; stopped: boolean } {
  const m = new StopMatcher(stops);
  let out = '';
  for (const p of pieces) {
    const r = m.push(p);
    out += r.emit;
    if (r.stopped) return { out, stopped: true };
  }
  return { out: out + m.flush(), stopped: false };
}

test('stop strings across pieces; the earliest one wins; held text comes out at the end', () => {
  assert.deepEqual(run(['END'], ['Hello E', 'N', 'D more']), { out: 'Hello ', stopped: true });
  assert.deepEqual(run(['xyz', 'lo'], ['Hel', 'lo xyz']), { out: 'Hel', stopped: true });
  assert.deepEqual(run(['END'], ['Hello E', 'N']), { out: 'Hello EN', stopped: false });
  assert.deepEqual(run([], ['a', 'b']), { out: 'ab', stopped: false });
  // What may still become a stop string is held, the rest goes out at once.
  const m = new StopMatcher(['</s>']);
  assert.equal(m.push('abc<').emit, 'abc');
  assert.equal(m.push('/').emit, '');
  assert.equal(m.push('x').emit, '</x');
});
