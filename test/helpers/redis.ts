// Where Redis-backed tests find their Redis: REDIS_URL when set; otherwise a private
// redis-server on a free port when the binary exists; otherwise the tests are skipped with a
// loud notice, unless REQUIRE_REDIS=1 (CI), where a missing Redis fails the run.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { globEscape } from '../../src/store/redis/keys.ts';

export interface TestRedis {
  url: string;
  stop(): Promise<void>;
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

async function waitForPing(port: number, child: ChildProcess): Promise<void> {
  const { Redis } = await import('ioredis');
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on('error', () => {}); // refusals are expected while the server starts
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch {
      client.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error('redis-server did not answer within 5 s');
}

function spawnRedis(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
}

/** A private redis-server on a free port that a test may stop and start again (outages). */
export interface PrivateRedis extends TestRedis {
  port: number;
  /** Starts it again on the same port (empty: nothing is saved); resolves once it answers PING. */
  start(): Promise<void>;
  /** Stops it with `signal` (SIGKILL: like a power loss). */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** A private redis-server (never the shared one), or null when the binary is missing. */
export async function startPrivateRedis(): Promise<PrivateRedis | null> {
  if (!hasRedisServer()) {
    if (process.env.REQUIRE_REDIS === '1') throw new Error('REQUIRE_REDIS=1 but no redis-server binary');
    return null;
  }
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    const started = spawnRedis(port);
    child = started;
    await waitForPing(port, started);
  };
  const kill = async (signal: NodeJS.Signals) => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill(signal);
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, start, stop: () => kill('SIGTERM'), kill };
}

/** A Redis for this test file, or null (tests must then skip) when none can be had. */
export async function startTestRedis(): Promise<TestRedis | null> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => {} };
  if (hasRedisServer()) {
    const port = await freePort();
    const child = spawnRedis(port);
    await waitForPing(port, child);
    return {
      url: `redis://127.0.0.1:${port}`,
      stop: async () => {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      },
    };
  }
  if (process.env.REQUIRE_REDIS === '1') {
    throw new Error('REQUIRE_REDIS=1 but neither REDIS_URL nor a redis-server binary is available');
  }
  console.warn('\n!!! NO REDIS: set REDIS_URL or install redis-server; Redis-backed tests are SKIPPED !!!\n');
  return null;
}

/** A key prefix unique to one test run, so tests never touch data they did not write. */
export function uniquePrefix(name: string): string {
  return `cpgw-test:${name}:${process.pid}:${Math.random().toString(36).slice(2, 8)}:`;
}

/** Deletes every key under the given prefixes (SCAN + UNLINK): only what this test wrote. */
export async function deleteKeysUnder(url: string, prefixes: Iterable<string>): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    for (const prefix of prefixes) {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${globEscape(prefix)}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await client.unlink(...keys);
      } while (cursor !== '0');
    }
  } finally {
    client.disconnect();
  }
}

/** Retries `attempt` every 20 ms until it resolves, up to timeoutMs (then throws its last error). */
export async function eventually(attempt: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await attempt();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
