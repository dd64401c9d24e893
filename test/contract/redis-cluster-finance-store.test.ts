// The Redis FinanceStore on a real Redis Cluster (three masters started by the test,
// helpers/redis-cluster.ts) against the finance contract: the budget-write and audit scripts
// touch only `{finance}` keys, so a CROSSSLOT script would fail here.
import { Cluster } from 'ioredis';
import { afterAll, describe } from 'vitest';
import { RedisFinanceStore } from '../../src/finance/redis-finance-store.ts';
import { parseNode } from '../../src/store/redis/connection.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.ts';
import { describeFinanceContract } from './finance-contract.ts';

const cluster: TestCluster | null = await startTestCluster();
const maybe = cluster ? describe : describe.skip;

maybe('RedisFinanceStore on a Redis Cluster', () => {
  afterAll(() => cluster?.stop());
  const open = (prefix: string) =>
    new RedisFinanceStore({ target: { clusterNodes: cluster!.nodes }, prefix });

  describeFinanceContract('redis cluster', async () => {
    const prefix = uniquePrefix('finance-cluster');
    const store = open(prefix);
    return {
      store,
      replica: async () => open(prefix),
      breakAudit: async () => {
        const client = new Cluster(cluster!.nodes.map(parseNode));
        await client.set(`${prefix}{finance}:audit`, 'not a stream');
        client.disconnect();
      },
      close: () => store.close(),
    };
  });
});
