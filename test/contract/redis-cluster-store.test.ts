// The Redis store on a real Redis Cluster (three masters started by the test, helpers/
// redis-cluster.ts) against the same contract as one Redis, plus what a cluster adds: every
// script's keys share a slot (a CROSSSLOT script would fail the contract), state spreads over
// the masters, keys() finds keys on every master, and replicas share pub/sub.
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { RedisStore } from '../../src/store/index.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.ts';
import { runStoreContract, until } from './contract-harness.ts';

const cluster: TestCluster | null = await startTestCluster();

function open(prefix: string): RedisStore {
  return new RedisStore({
    clusterNodes: cluster!.nodes,
    prefix,
    clock: systemClock,
    cacheMaxBytes: 10 * 1024 * 1024,
  });
}

const maybe = cluster ? describe : describe.skip;

maybe('RedisStore on a Redis Cluster', () => {
  afterAll(() => cluster?.stop());

  runStoreContract('redis cluster', async () => {
    const prefix = uniquePrefix('cluster');
    const store = open(prefix);
    return {
      store,
      pass: (ms) => new Promise((r) => setTimeout(r, ms)),
      exactTime: false,
      clock: new ManualClock(Date.now()),
      replica: async () => open(prefix),
      close: () => store.close(),
    };
  });

  it('spreads companies over the masters, and keys() lists them from every master', async () => {
    const prefix = uniquePrefix('spread');
    const store = open(prefix);
    try {
      const inns = Array.from({ length: 30 }, (_, i) => String(7707083800 + i));
      await Promise.all(inns.map((inn) => store.set(`window:${inn}`, '1', 60_000)));
      const perMaster = await cluster!.keysPerMaster(`${prefix}s:*`);
      expect(perMaster.size).toBe(3);
      for (const n of perMaster.values()) expect(n).toBeGreaterThan(0);
      expect([...perMaster.values()].reduce((a, b) => a + b, 0)).toBe(30);
      expect((await store.keys('window:')).sort()).toEqual(inns.map((inn) => `window:${inn}`).sort());
    } finally {
      await store.close();
    }
  });

  it('delivers a message published by one replica to a subscriber on another', async () => {
    const prefix = uniquePrefix('bus');
    const [a, b] = [open(prefix), open(prefix)];
    try {
      const got: string[] = [];
      const off = await b.subscribe('coalesce:x', (m) => got.push(m));
      await a.publish('coalesce:x', 'done');
      await until(() => got.length === 1);
      expect(got).toEqual(['done']);
      await off();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
