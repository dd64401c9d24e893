// The Redis store's state role: plain keys with PX (never evicted by the cache's accounting),
// owner locks (compare-and-delete / compare-and-extend scripts) and binary blobs.
//
// keys() of a listed prefix (LISTED_PREFIXES: what the check poller and the webhook workers list
// every second) reads that prefix's index, a sorted set of its keys by expiry written before each
// key. Any other prefix (admin listings) scans every master of a cluster (connection.ts
// dataNodes). The scan walks the whole keyspace, cache entries included: at 200k keys the four
// scans a second a replica used to make cost Redis 560 ms of CPU a second. Keys an older version
// wrote without the index are found by a scan of the prefix on its first listing in a process
// and every BACKFILL_EVERY_MS after (a rolling upgrade's keys are picked up within that).
//
// Must never: list cache entries or blobs among state keys, or let a non-owner release or renew.
import type { Clock } from '../../clock.ts';
import { listedPrefixOf, type StateStore } from '../state-store.ts';
import { DEFAULT_KEYS_LIMIT, ttlOf } from '../store-util.ts';
import { dataNodes } from './connection.ts';
import type { RedisLink } from './link.ts';
import { INDEX_ADD, INDEX_LIST, RELEASE_LOCK, RENEW_LOCK } from './state-scripts.ts';

/** How often a listed prefix is scanned for keys written without the index (older versions). */
export const BACKFILL_EVERY_MS = 15 * 60_000;

export class RedisState implements StateStore {
  /** Per listed prefix, when this process last scanned it into the index. */
  private readonly backfilled = new Map<string, number>();

  constructor(
    private readonly link: RedisLink,
    private readonly clock: Clock,
  ) {}

  async get(key: string): Promise<string | null> {
    const { link } = this;
    return link.run(() => link.client.get(link.k.state(key)));
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const { link } = this;
    const ttl = ttlOf(ttlMs);
    await this.index(key, ttl);
    await link.run(() => link.client.set(link.k.state(key), value, 'PX', ttl));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const { link } = this;
    const ttl = ttlOf(ttlMs);
    await this.index(key, ttl);
    return link.run(async () => (await link.client.set(link.k.state(key), value, 'PX', ttl, 'NX')) === 'OK');
  }

  async keys(prefix: string, limit = DEFAULT_KEYS_LIMIT): Promise<string[]> {
    const listed = listedPrefixOf(prefix);
    if (!listed) return this.scan(prefix, limit);
    await this.backfill(listed);
    const { link } = this;
    const members = (await link.script(
      INDEX_LIST,
      [link.k.stateIndex(listed)],
      [this.clock.now()],
    )) as string[];
    const found: string[] = [];
    for (const key of members) {
      if (found.length >= limit) break;
      if (key.startsWith(prefix)) found.push(key);
    }
    return found;
  }

  /**
   * Written before the key itself (a key is never without its entry; an entry whose key did not
   * get written lists a key that reads as absent, as an expired one does until its entry lapses).
   */
  private async index(key: string, ttl: number): Promise<void> {
    const listed = listedPrefixOf(key);
    if (!listed) return;
    const { link } = this;
    await link.script(INDEX_ADD, [link.k.stateIndex(listed)], [this.clock.now(), ttl, key]);
  }

  /** Puts keys of a listed prefix that are not in its index (written by an older version) into it. */
  private async backfill(listed: string): Promise<void> {
    const now = this.clock.now();
    const last = this.backfilled.get(listed);
    if (last !== undefined && now - last < BACKFILL_EVERY_MS && now >= last) return;
    this.backfilled.set(listed, now);
    try {
      await this.scanIntoIndex(listed, now);
    } catch (error) {
      this.backfilled.delete(listed); // tried again on the next listing
      throw error;
    }
  }

  private async scanIntoIndex(listed: string, now: number): Promise<void> {
    const { link } = this;
    const keys = await this.scan(listed, Number.MAX_SAFE_INTEGER);
    const ttls = await Promise.all(keys.map((key) => link.run(() => link.client.pttl(link.k.state(key)))));
    const args: Array<string | number> = [];
    keys.forEach((key, i) => {
      if (ttls[i]! > 0) args.push(now + ttls[i]!, key);
    });
    for (let i = 0; i < args.length; i += 2000) {
      const batch = args.slice(i, i + 2000);
      // NX: an entry written meanwhile through the index is the newer one.
      await link.run(() => link.client.zadd(link.k.stateIndex(listed), 'NX', ...batch));
    }
  }

  /** Every master's keys under the prefix, by SCAN (walks the whole keyspace). */
  private async scan(prefix: string, limit: number): Promise<string[]> {
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
