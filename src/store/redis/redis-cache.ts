// The Redis store's cache role: entries as plain keys with PX, tag sets for purges, and byte
// accounting in one `{cache}` slot (state-scripts.ts).
//
// Must never: store an entry larger than cacheMaxBytes, or count bytes it did not write.
import type { CacheSetOptions, CacheStore } from '../cache-store.ts';
import { ttlOf, uniqueStrings } from '../store-util.ts';
import { innTag } from './keys.ts';
import type { RedisLink } from './link.ts';
import { CACHE_ACCOUNT, CACHE_REPLACE, TAG_ADD, TAG_TAKE } from './state-scripts.ts';

export class RedisCache implements CacheStore {
  constructor(
    private readonly link: RedisLink,
    private readonly cacheMaxBytes: number,
  ) {}

  async cacheGet(key: string): Promise<Buffer | null> {
    const { link } = this;
    return link.run(() => link.client.getBuffer(link.k.cache(key)));
  }

  async cacheGetMany(keys: readonly string[]): Promise<Array<Buffer | null>> {
    const { link } = this;
    const names = keys.map((key) => link.k.cache(key));
    // MGET must stay inside one hash slot on a cluster: grouped by the company tag the key
    // carries (keys.ts), each untagged key on its own.
    const groups = new Map<string, number[]>();
    names.forEach((name, i) => {
      const slot = innTag(keys[i]!) ?? name;
      const group = groups.get(slot);
      if (group) group.push(i);
      else groups.set(slot, [i]);
    });
    const found: Array<Buffer | null> = keys.map(() => null);
    await link.run(() =>
      Promise.all(
        [...groups.values()].map(async (group) => {
          const values = await link.client.mgetBuffer(...group.map((i) => names[i]!));
          group.forEach((i, j) => {
            found[i] = values[j] ?? null;
          });
        }),
      ),
    );
    return found;
  }

  async cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void> {
    const { link } = this;
    const ttl = ttlOf(options.ttlMs);
    const size = Math.max(1, value.length + Buffer.byteLength(key));
    if (size > this.cacheMaxBytes) return this.cacheDelete(key);
    const entry = link.k.cache(key);
    await link.run(() =>
      Promise.all([
        link.client.set(entry, value, 'PX', ttl),
        link.eval(CACHE_ACCOUNT, this.accountKeys(), ['set', entry, size, ttl]),
        ...uniqueStrings(options.tags ?? []).map((tag) =>
          link.eval(TAG_ADD, [link.k.cacheTag(tag)], [entry, ttl]),
        ),
      ]),
    );
  }

  async cacheDelete(key: string): Promise<void> {
    const { link } = this;
    const entry = link.k.cache(key);
    await link.run(() =>
      Promise.all([link.client.del(entry), link.eval(CACHE_ACCOUNT, this.accountKeys(), ['del', entry])]),
    );
  }

  async cacheReplace(key: string, expect: Buffer, value: Buffer): Promise<boolean> {
    const { link } = this;
    const size = Math.max(1, value.length + Buffer.byteLength(key));
    if (size > this.cacheMaxBytes) return false;
    const entry = link.k.cache(key);
    const ttl = Number(await link.script(CACHE_REPLACE, [entry], [expect, value]));
    if (ttl <= 0) return false;
    await link.script(CACHE_ACCOUNT, this.accountKeys(), ['set', entry, size, ttl]);
    return true;
  }

  /** The entry and what is left of its TTL, in one round trip (the local tier keeps it no longer). */
  async cacheGetWithTtl(key: string): Promise<{ value: Buffer; ttlMs: number } | null> {
    const { link } = this;
    const entry = link.k.cache(key);
    const [value, ttl] = await link.run(async () => {
      const replies = (await link.client.pipeline().getBuffer(entry).pttl(entry).exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
      return [replies[0]?.[1] as Buffer | null, Number(replies[1]?.[1] ?? -2)] as const;
    });
    return value ? { value, ttlMs: ttl } : null;
  }

  async cachePurgeTag(tag: string): Promise<number> {
    return (await this.purgeTagKeys(tag)).purged;
  }

  /** Purges a tag; answers how many entries were still cached and the logical keys it named. */
  async purgeTagKeys(tag: string): Promise<{ purged: number; keys: string[] }> {
    const { link } = this;
    return link.run(async () => {
      const entries = (await link.eval(TAG_TAKE, [link.k.cacheTag(tag)], [])) as string[];
      if (entries.length === 0) return { purged: 0, keys: [] };
      const deleted = await Promise.all(entries.map((entry) => link.client.del(entry)));
      await link.eval(CACHE_ACCOUNT, this.accountKeys(), ['del', ...entries]);
      const keys = entries.map((e) => link.k.logicalCache(e)).filter((k): k is string => k !== null);
      return { purged: deleted.reduce((sum, n) => sum + n, 0), keys };
    });
  }

  async cacheBytes(): Promise<number> {
    return Number(await this.link.script(CACHE_ACCOUNT, this.accountKeys(), ['read']));
  }

  private accountKeys(): string[] {
    const { k } = this.link;
    return [k.cacheSizes, k.cacheExpiry, k.cacheBytes];
  }
}
