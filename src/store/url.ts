// Remote store addresses: redis://HOST:PORT[/DB], rediss:// (TLS), redis-cluster://h1:p1,h2:p2 (rediss-cluster:// for TLS).
import { StoreUrlError } from '../errors.js';

export interface StoreNode {
  host: string;
  port: number;
}

/** Where and how to connect; password from the URL, else KVPACK_REDIS_PASSWORD. */
export interface StoreTarget {
  mode: 'single' | 'cluster';
  nodes: StoreNode[];
  tls: boolean;
  /** Logical database (single mode only; a cluster has only database 0). */
  db: number;
  username?: string;
  password?: string;
}

const SCHEMES: Readonly<Record<string, { mode: StoreTarget['mode']; tls: boolean }>> = {
  'redis:': { mode: 'single', tls: false },
  'rediss:': { mode: 'single', tls: true },
  'redis-cluster:': { mode: 'cluster', tls: false },
  'rediss-cluster:': { mode: 'cluster', tls: true },
};

const DEFAULT_PORT = 6379;

function parseNode(url: string, text: string): StoreNode {
  // [v6]:port or host:port or host; hosts are names or addresses, never paths.
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d*))?$/.exec(text);
  if (!m) throw new StoreUrlError(url, `'${text}' is not HOST[:PORT]`);
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  if (m[2] === undefined) return { host, port: DEFAULT_PORT };
  const port = Number(m[2]);
  if (m[2] === '' || !Number.isInteger(port) || port < 1 || port > 65535) throw new StoreUrlError(url, `port '${m[2]}' is not in [1, 65535]`);
  return { host, port };
}

function decode(url: string, what: string, s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new StoreUrlError(url, `${what} is not valid percent-encoding`);
  }
}

/** Parses a --kv-store address; StoreUrlError names the part that is wrong. */
export function parseStoreUrl(url: string, env: NodeJS.ProcessEnv = process.env): StoreTarget {
  if (typeof url !== 'string' || url === '') throw new StoreUrlError(String(url), 'empty address');
  const sep = url.indexOf('//');
  const scheme = sep > 0 ? url.slice(0, sep).toLowerCase() : '';
  const kind = SCHEMES[scheme];
  if (!kind)
    throw new StoreUrlError(
      url,
      `unknown scheme '${scheme || url}' (known: ${Object.keys(SCHEMES)
        .map((s) => `${s}//`)
        .join(', ')})`,
    );
  let rest = url.slice(sep + 2);
  const q = rest.search(/[?#]/);
  if (q >= 0) throw new StoreUrlError(url, 'query strings and fragments are not supported');
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const auth = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = auth.indexOf(':');
    const user = colon >= 0 ? auth.slice(0, colon) : auth;
    if (user) username = decode(url, 'username', user);
    if (colon >= 0) password = decode(url, 'password', auth.slice(colon + 1));
  }
  const slash = rest.indexOf('/');
  const hostPart = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : '';
  if (hostPart === '') throw new StoreUrlError(url, 'no host');
  const hosts = hostPart.split(',');
  if (kind.mode === 'single' && hosts.length > 1) throw new StoreUrlError(url, `several hosts need redis-cluster:// (got ${hosts.length})`);
  const nodes = hosts.map((h) => parseNode(url, h));
  let db = 0;
  if (path !== '') {
    if (!/^\d+$/.test(path)) throw new StoreUrlError(url, `database '${path}' is not a non-negative integer`);
    db = Number(path);
    if (kind.mode === 'cluster' && db !== 0) throw new StoreUrlError(url, `a cluster has only database 0, got ${db}`);
  }
  const envPassword = env.KVPACK_REDIS_PASSWORD;
  if (password === undefined && envPassword) password = envPassword;
  return { mode: kind.mode, nodes, tls: kind.tls, db, ...(username ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}
