// Real redis-server processes for tests: each on a free loopback port with its own temp dir, stopped at the end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** Why the Redis tests cannot run here, or undefined when they can (node:test `skip` takes it as the reason). */
export function redisMissing(): string | undefined {
  for (const bin of ['redis-server', 'redis-cli']) {
    if (spawnSync(bin, ['--version'], { stdio: 'ignore' }).status !== 0) return `${bin} not found (apt-get install -y redis-server)`;
  }
  return undefined;
}

/** Prints the skip reason once per test file, so a skipped run says why in plain output too. */
export function reportSkip(file: string): string | undefined {
  const why = redisMissing();
  if (why) console.log(`${file}: skipping Redis tests: ${why}`);
  return why;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** One raw PING over TCP: true on +PONG (no client library between the test and the server's liveness). */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.once('error', () => done(false));
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

async function until(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

/** Every process still running: killed when the test process exits, however it exits. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export class RedisServer {
  private proc: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private admin_: Redis | null = null;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly args: string[],
  ) {}

  /**
   * Starts redis-server and waits until it answers PING. A port chosen here is tried again with another when the
   * server exits at start: between freePort's close and redis's bind another process (a concurrent test file's
   * client, a cluster's bus port at port + 10000) may take it (seen once in CI: "exited at start").
   */
  static async start(args: string[] = [], port?: number): Promise<RedisServer> {
    for (let attempt = 1; ; attempt++) {
      const s = new RedisServer(port ?? (await freePort()), mkdtempSync(join(tmpdir(), 'kvpack-redis-')), args);
      try {
        await s.restart();
        return s;
      } catch (e) {
        rmSync(s.dir, { recursive: true, force: true });
        if (port !== undefined || attempt >= 3 || !/exited at start/.test((e as Error).message)) throw e;
      }
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** (Re)starts the process on the same port and dir (nothing persisted: it comes back empty). */
  async restart(): Promise<void> {
    const p = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, ...this.args], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.proc = p;
    live.add(p);
    this.exited = new Promise((r) => p.once('exit', () => r()));
    p.once('exit', () => live.delete(p));
    let dead = false;
    p.once('exit', () => (dead = true));
    await until(`redis-server on port ${this.port}`, 5000, async () => {
      if (dead) throw new Error(`redis-server on port ${this.port} exited at start`);
      return ping(this.port);
    });
  }

  /** A plain client for test setup and inspection (CONFIG, SETRANGE, TTL...). */
  admin(): Redis {
    this.admin_ ??= new Redis({ host: '127.0.0.1', port: this.port, lazyConnect: false, maxRetriesPerRequest: 1 });
    return this.admin_;
  }

  /** Kills the process (SIGKILL: a crash, not a shutdown) and waits for it to exit. */
  async kill(): Promise<void> {
    this.admin_?.disconnect();
    this.admin_ = null;
    this.proc?.kill('SIGKILL');
    await this.exited;
    this.proc = null;
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A 3-master Redis Cluster on loopback (redis-cli --cluster create, no replicas). */
export class RedisCluster {
  private constructor(readonly nodes: RedisServer[]) {}

  static async start(n = 3): Promise<RedisCluster> {
    const nodes: RedisServer[] = [];
    try {
      for (let i = 0; i < n; i++) {
        const port = await freePort();
        nodes.push(
          await RedisServer.start(['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000'], port),
        );
      }
      const addrs = nodes.map((s) => `127.0.0.1:${s.port}`);
      const r = spawnSync('redis-cli', ['--cluster', 'create', ...addrs, '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 20000 });
      if (r.status !== 0) throw new Error(`redis-cli --cluster create failed: ${r.stdout}${r.stderr}`);
      for (const s of nodes) {
        await until(`cluster_state:ok on ${s.port}`, 10000, async () => String(await s.admin().cluster('INFO')).includes('cluster_state:ok'));
      }
      return new RedisCluster(nodes);
    } catch (e) {
      for (const s of nodes) await s.stop();
      throw e;
    }
  }

  get url(): string {
    return `redis-cluster://${this.nodes.map((s) => `127.0.0.1:${s.port}`).join(',')}`;
  }

  async stop(): Promise<void> {
    for (const s of this.nodes) await s.stop();
  }
}
