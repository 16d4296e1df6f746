// Store values: the bytes one remote key holds, signed so a corrupt, misplaced or forged value is never used.
// With a store key the check is an HMAC-SHA256: whoever can write to Redis but lacks the key cannot make a
// value this instance accepts. Without one (an explicitly unauthenticated store) it is a plain sha256,
// which catches corruption only.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Bump when the value layout or the meaning of a payload changes: keys carry the version (see
 * storeKey), so values of another version are never even read. 2: keyed MAC instead of sha256.
 */
export const STORE_FORMAT_VERSION = 2;

/** Layout: "KVRS" | u16 version | u16 key length | key (UTF-8) | u32 payload length | payload | MAC of all before. */
const MAGIC = Buffer.from('KVRS', 'latin1');
const SUM = 32;

/** The secret values are signed with; null = unauthenticated (sha256 only). */
export type StoreMacKey = Buffer | null;

function mac(secret: StoreMacKey, parts: readonly Uint8Array[]): Buffer {
  const h = secret ? createHmac('sha256', secret) : createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** The Redis key of a chunk key under a namespace: the format version is part of the name. */
export function storeKey(namespace: string, key: string, version = STORE_FORMAT_VERSION): string {
  return `${namespace}:v${version}:${key}`;
}

export function encodeStoreValue(fullKey: string, payload: Uint8Array, secret: StoreMacKey, version = STORE_FORMAT_VERSION): Buffer {
  const key = Buffer.from(fullKey, 'utf8');
  const head = Buffer.alloc(4 + 2 + 2 + key.length + 4);
  MAGIC.copy(head, 0);
  head.writeUInt16LE(version, 4);
  head.writeUInt16LE(key.length, 6);
  key.copy(head, 8);
  head.writeUInt32LE(payload.length, 8 + key.length);
  const sum = mac(secret, [head, payload]);
  return Buffer.concat([head, payload, sum]);
}

export type DecodedValue = { ok: true; payload: Buffer } | { ok: false; reason: string };

/** Verifies a value read under fullKey; the reason says why it was refused (for the log line). */
export function decodeStoreValue(fullKey: string, value: Buffer, secret: StoreMacKey, version = STORE_FORMAT_VERSION): DecodedValue {
  const refuse = (reason: string): DecodedValue => ({ ok: false, reason });
  if (value.length < 12 + SUM) return refuse(`truncated (${value.length} bytes)`);
  if (!value.subarray(0, 4).equals(MAGIC)) return refuse('not a kvpack store value (bad magic)');
  const body = value.subarray(0, value.length - SUM);
  if (!timingSafeEqual(mac(secret, [body]), value.subarray(value.length - SUM))) {
    return refuse(secret ? 'MAC mismatch (corrupted, truncated, forged or signed with another key)' : 'checksum mismatch (corrupted or truncated)');
  }
  const v = value.readUInt16LE(4);
  if (v !== version) return refuse(`store format version ${v}, this kvpack reads ${version}`);
  const klen = value.readUInt16LE(6);
  if (8 + klen + 4 > body.length) return refuse('key length beyond the value');
  const key = value.subarray(8, 8 + klen).toString('utf8');
  if (key !== fullKey) return refuse(`written under another key (${key})`);
  const plen = value.readUInt32LE(8 + klen);
  const payload = body.subarray(8 + klen + 4);
  if (payload.length !== plen) return refuse(`payload is ${payload.length} bytes, header says ${plen}`);
  return { ok: true, payload };
}
