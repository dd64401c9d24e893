// The Redis store's state role: plain keys with PX (never evicted by the cache's accounting),
// owner locks (compare-and-delete / compare-and-extend scripts) and binary blobs.
//
// keys() scans every master of a cluster (connection.ts dataNodes).
//
// Must never: list cache entries or blobs among state keys, or let a non-owner release or renew.
import type { StateStore } from '../state-store.ts';
import { DEFAULT_KEYS_LIMIT, ttlOf } from '../store-util.ts';
import { dataNodes } from './connection.ts';
import type { RedisLink } from './link.ts';
import { RELEASE_LOCK, RENEW_LOCK } from './state-scripts.ts';

export class RedisState implements StateStore {
  constructor(private readonly link: RedisLink) {}

  async get(key: string): Promise<string | null> {
    const { link } = this;
    return link.run(() => link.client.get(link.k.state(key)));
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const { link } = this;
    const ttl = ttlOf(ttlMs);
    await link.run(() => link.client.set(link.k.state(key), value, 'PX', ttl));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const { link } = this;
    const ttl = ttlOf(ttlMs);
    return link.run(async () => (await link.client.set(link.k.state(key), value, 'PX', ttl, 'NX')) === 'OK');
  }

  async keys(prefix: string, limit = DEFAULT_KEYS_LIMIT): Promise<string[]> {
    const { link } = this;
    return link.run(async () => {
      const found = new Set<string>();
      // A cluster spreads state keys over its masters by INN tag: SCAN each one.
      for (const node of dataNodes(link.client)) {
        for (const pattern of link.k.statePatterns(prefix)) {
          let cursor = '0';
          do {
            const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            cursor = next;
            for (const redisKey of batch) {
              const logical = link.k.logicalState(redisKey);
              if (logical?.startsWith(prefix) && found.size < limit) found.add(logical);
            }
          } while (cursor !== '0' && found.size < limit);
        }
      }
      return [...found];
    });
  }

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.setIfAbsent(key, owner, ttlMs);
  }

  async releaseLock(key: string, owner: string): Promise<boolean> {
    return Number(await this.link.script(RELEASE_LOCK, [this.link.k.state(key)], [owner])) === 1;
  }

  async renewLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = ttlOf(ttlMs);
    return Number(await this.link.script(RENEW_LOCK, [this.link.k.state(key)], [owner, ttl])) === 1;
  }

  async putBlob(key: string, value: Buffer, ttlMs: number): Promise<void> {
    const { link } = this;
    const ttl = ttlOf(ttlMs);
    await link.run(() => link.client.set(link.k.blob(key), value, 'PX', ttl));
  }

  async getBlob(key: string): Promise<Buffer | null> {
    const { link } = this;
    return link.run(() => link.client.getBuffer(link.k.blob(key)));
  }
}
