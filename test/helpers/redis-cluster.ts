// A private Redis Cluster for tests: three masters (and one replica each) as local redis-server
// processes on free ports, joined with `redis-cli --cluster create`, torn down (processes and
// their temporary directory) by stop(). Node timeout 1 s, so a replica takes over from a dead or
// handed-over master within a few seconds: failover() hands a slot over politely (CLUSTER
// FAILOVER), killMaster() SIGKILLs its master and promoted() waits for the replica's election. Without redis-server/redis-cli the tests are skipped
// with a loud notice, unless REQUIRE_REDIS=1, where that fails the run.
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './redis.ts';

const run = promisify(execFile);

export interface TestCluster {
  /** Startup nodes for store.redisClusterNodes: every master, "127.0.0.1:port". */
  nodes: string[];
  /** The port of the master serving `key`'s slot right now. */
  masterOf(key: string): Promise<number>;
  /** Masters' ports right now. */
  masters(): Promise<number[]>;
  /** Keys under `pattern` per master port (to see state spread over the masters). */
  keysPerMaster(pattern: string): Promise<Map<number, number>>;
  /**
   * Hands `key`'s slot over to its master's replica (CLUSTER FAILOVER on the replica) and waits
   * until the replica is master and every node agrees. Answers the old and new master's ports.
   */
  failover(key: string): Promise<{ from: number; to: number }>;
  /**
   * SIGKILLs the master serving `key`'s slot (no hand-over: the cluster must notice, mark it
   * failed after the node timeout and elect its replica). Answers its port once it has exited.
   */
  killMaster(key: string): Promise<number>;
  /**
   * Waits until `key`'s slot is served by a master other than `from`, every live node agrees and
   * reports cluster_state:ok. Answers the new master's port.
   */
  promoted(key: string, from: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

function hasBinaries(): boolean {
  return ['redis-server', 'redis-cli'].every(
    (bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0,
  );
}

/** A node's redis-server exited before it answered (its output kept for the message). */
class NodeExited extends Error {}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      if (error instanceof NodeExited) throw error;
      // a node not answering yet
    }
    if (Date.now() > deadline) throw new Error(`Redis cluster: ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function withNode<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

const info = (port: number, section: string) =>
  withNode(port, (c) =>
    c.call(section === 'cluster' ? 'CLUSTER' : 'INFO', section === 'cluster' ? 'INFO' : section),
  ) as Promise<string>;

/** A 3-master cluster (with a replica per master when `replicas`), or null when the tools are missing. */
export async function startTestCluster(options: { replicas?: boolean } = {}): Promise<TestCluster | null> {
  if (!hasBinaries()) {
    if (process.env.REQUIRE_REDIS === '1')
      throw new Error('REQUIRE_REDIS=1 but redis-server/redis-cli are missing');
    console.warn('\n!!! NO redis-server/redis-cli: Redis Cluster tests are SKIPPED !!!\n');
    return null;
  }
  const count = options.replicas ? 6 : 3;
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  const childOf = new Map<number, ChildProcess>();
  const alive = (port: number) => {
    const child = childOf.get(port);
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  };
  /** A node to ask about the cluster: the first one still running. */
  const anyLive = () => {
    const port = ports.find(alive);
    if (port === undefined) throw new Error('Redis cluster: no node is running');
    return port;
  };
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Each node on free ports; a node that exits before it answers (its port taken meanwhile by a
    // parallel test: freePort() only knew it was free a moment ago) is started again on others.
    for (let i = 0; i < count; i++) {
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        // The cluster bus defaults to port + 10000, which may be another process's port (a gateway
        // a parallel test started): give it a free port of its own (Redis 7 cluster-port).
        const busPort = await freePort();
        const child = spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--cluster-enabled',
            'yes',
            '--cluster-port',
            String(busPort),
            '--cluster-config-file',
            join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            '1000',
            '--dir',
            dir,
            '--save',
            '',
            '--appendonly',
            'no',
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let said = '';
        const keep = (chunk: Buffer) => {
          said = (said + chunk.toString()).slice(-2_000);
        };
        child.stdout?.on('data', keep);
        child.stderr?.on('data', keep);
        children.push(child);
        const exited = () => child.exitCode !== null || child.signalCode !== null;
        try {
          await until(`node ${port} up`, async () => {
            if (exited()) throw new NodeExited(said);
            return withNode(port, async (c) => (await c.ping()) === 'PONG');
          });
        } catch (error) {
          if (!(error instanceof NodeExited) || attempt >= 3) {
            throw new Error(`${(error as Error).message}; redis-server said: ${said.trim().slice(-500)}`);
          }
          continue;
        }
        ports.push(port);
        childOf.set(port, child);
        break;
      }
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      options.replicas ? '1' : '0',
      '--cluster-yes',
    ]);
    await until('every node sees state ok', async () => {
      for (const port of ports) if (!(await info(port, 'cluster')).includes('cluster_state:ok')) return false;
      return true;
    });
    if (options.replicas) {
      await until('replicas in sync', async () => {
        let synced = 0;
        for (const port of ports)
          if ((await info(port, 'replication')).includes('master_link_status:up')) synced++;
        return synced === 3;
      });
    }
  } catch (error) {
    await stop();
    throw error;
  }

  const slotsOf = async (): Promise<
    Array<{ from: number; to: number; master: number; replicas: number[] }>
  > => {
    const raw = (await withNode(anyLive(), (c) => c.call('CLUSTER', 'SLOTS'))) as Array<
      [number, number, [string, number], ...Array<[string, number]>]
    >;
    return raw.map(([from, to, master, ...replicas]) => ({
      from,
      to,
      master: Number(master[1]),
      replicas: replicas.map((r) => Number(r[1])),
    }));
  };
  const slotOf = (key: string) =>
    withNode(anyLive(), (c) => c.call('CLUSTER', 'KEYSLOT', key)) as Promise<number>;
  const rangeOf = async (key: string) => {
    const slot = await slotOf(key);
    const range = (await slotsOf()).find((r) => r.from <= slot && slot <= r.to);
    if (!range) throw new Error(`no master serves slot ${slot}`);
    return range;
  };

  return {
    nodes: ports.slice(0, 3).map((p) => `127.0.0.1:${p}`),
    masterOf: async (key) => (await rangeOf(key)).master,
    masters: async () => [...new Set((await slotsOf()).map((r) => r.master))],
    keysPerMaster: async (pattern) => {
      const out = new Map<number, number>();
      for (const { master } of await slotsOf()) {
        if (out.has(master)) continue;
        const keys = await withNode(master, async (c) => {
          let cursor = '0';
          let n = 0;
          do {
            const [next, batch] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            cursor = next;
            n += batch.length;
          } while (cursor !== '0');
          return n;
        });
        out.set(master, keys);
      }
      return out;
    },
    failover: async (key) => {
      if (!options.replicas)
        throw new Error('this cluster has no replicas (startTestCluster({ replicas: true }))');
      // A replica in sync may not be listed in CLUSTER SLOTS yet (the nodes learn it by gossip).
      let range = await rangeOf(key);
      await until('the slot lists its replica', async () => {
        range = await rangeOf(key);
        return range.replicas.length > 0;
      });
      const to = range.replicas[0]!;
      await until('replica caught up before the hand-over', async () =>
        (await info(to, 'replication')).includes('master_link_status:up'),
      );
      await withNode(to, (c) => c.call('CLUSTER', 'FAILOVER'));
      await until('the replica became master on every node', async () => {
        for (const port of ports) {
          const slots = (await withNode(port, (c) => c.call('CLUSTER', 'SLOTS'))) as Array<
            [number, number, [string, number]]
          >;
          const served = slots.find(([a, b]) => a <= range.from && range.from <= b);
          if (!served || Number(served[2][1]) !== to) return false;
        }
        return true;
      });
      return { from: range.master, to };
    },
    killMaster: async (key) => {
      const range = await rangeOf(key);
      if (!options.replicas || range.replicas.length === 0)
        throw new Error(`slot of ${key} has no replica to take over (startTestCluster({ replicas: true }))`);
      await until('the replica in sync before the kill', async () =>
        (await info(range.replicas[0]!, 'replication')).includes('master_link_status:up'),
      );
      const child = childOf.get(range.master)!;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      return range.master;
    },
    promoted: async (key, from, timeoutMs = 20_000) => {
      const slot = await slotOf(key);
      let to = 0;
      await until(
        `a replica promoted for slot ${slot}`,
        async () => {
          const seen = new Set<number>();
          for (const port of ports.filter(alive)) {
            if (!(await info(port, 'cluster')).includes('cluster_state:ok')) return false;
            const slots = (await withNode(port, (c) => c.call('CLUSTER', 'SLOTS'))) as Array<
              [number, number, [string, number]]
            >;
            const served = slots.find(([a, b]) => a <= slot && slot <= b);
            if (!served) return false;
            seen.add(Number(served[2][1]));
          }
          const [master] = [...seen];
          if (seen.size !== 1 || master === from) return false;
          to = master!;
          return true;
        },
        timeoutMs,
      );
      return to;
    },
    stop,
  };
}
