// The shared Store: any number of gateway replicas on one Redis or one Redis Cluster (ioredis). Each role is its own
// small class over one shared command connection (link.ts); pub/sub has its own connection.
// Every multi-step operation is one Lua script (*-scripts.ts); key names and hash tags are in
// keys.ts. In front of the cache role sits an in-process tier (local-cache-tier.ts) when
// localCacheBytes > 0.
//
// Time: budget holds and limiter windows use Redis server time (TIME inside the scripts), so
// replicas agree whatever their own clocks say. Budget periods ("day:2026-01-15"), leases and
// coverage windows follow the gateway clock passed in by callers; serverTimeMs() is the money
// clock the callers' budget periods and leases follow (cost/money-clock.ts); serverTimeSkewMs() measures
// the difference for readiness checks.
//
// Failure: commands fail fast (no offline queue once connected, command timeout) with
// StoreUnavailableError; the client keeps reconnecting in the background (connection.ts).
//
// Must never: hang a request on a dead Redis, block the event loop, or touch keys outside its prefix.
import type { Clock } from '../../clock.ts';
import { ComposedStore } from '../composed-store.ts';
import { type ConnectionOptions, onReconnect, openClient, quit, type RedisTarget } from './connection.ts';
import { RedisKeys } from './keys.ts';
import { RedisLink } from './link.ts';
import { LocalCacheTier } from './local-cache-tier.ts';
import { RedisBudgets } from './redis-budgets.ts';
import { RedisBus } from './redis-bus.ts';
import { RedisCache } from './redis-cache.ts';
import { RedisCharges } from './redis-charges.ts';
import { RedisLedger } from './redis-ledger.ts';
import { RedisSlots } from './redis-slots.ts';
import { RedisState } from './redis-state.ts';

export interface RedisStoreOptions extends ConnectionOptions {
  /** One Redis server; ignored when clusterNodes is set. */
  url?: string;
  /** A Redis Cluster's startup nodes ("host:port"); keys.ts keeps each script's keys in one slot. */
  clusterNodes?: string[];
  /** Prepended to every key and channel. Default "cpgw:". */
  prefix?: string;
  /** The gateway clock; used only to measure skew against Redis (serverTimeSkewMs). */
  clock: Clock;
  /** Entries larger than this are not stored. Redis's maxmemory policy bounds the total. */
  cacheMaxBytes?: number;
  /** Approximate cap of the ledger stream (XADD MAXLEN ~). Default 1,000,000 records. */
  ledgerMaxLen?: number;
  /** Reports a lost connection (once per outage) and throwing subscriber handlers. Default: process.emitWarning. */
  onError?: (error: unknown) => void;
  /** Bytes of the in-process tier in front of the cache role (local-cache-tier.ts); 0 or absent = none. */
  localCacheBytes?: number;
}

function redisTarget(options: RedisStoreOptions): RedisTarget {
  if (options.clusterNodes?.length) return { clusterNodes: options.clusterNodes };
  if (options.url) return { url: options.url };
  throw new RangeError('RedisStore needs a url or clusterNodes');
}

export class RedisStore extends ComposedStore {
  override readonly kind = 'redis' as const;
  private readonly link: RedisLink;
  private readonly bus: RedisBus;
  private readonly clock: Clock;
  /** The in-process cache tier, when configured. */
  readonly localTier: LocalCacheTier | null;
  /** Set only with an in-process tier (Store.cachePeek). */
  override readonly cachePeek?: (key: string) => Buffer | null;

  constructor(options: RedisStoreOptions) {
    const onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
    const link = new RedisLink(
      openClient(redisTarget(options), options, onError),
      new RedisKeys(options.prefix ?? 'cpgw:'),
      onError,
    );
    const ledgerMaxLen = options.ledgerMaxLen ?? 1_000_000;
    const bus = new RedisBus(link);
    const remote = new RedisCache(link, options.cacheMaxBytes ?? Number.MAX_SAFE_INTEGER);
    const localBytes = options.localCacheBytes ?? 0;
    const tier = localBytes > 0 ? new LocalCacheTier(remote, bus, options.clock, localBytes, onError) : null;
    super({
      cache: tier ?? remote,
      state: new RedisState(link, options.clock),
      budgets: new RedisBudgets(link),
      slots: new RedisSlots(link),
      ledger: new RedisLedger(link, ledgerMaxLen),
      bus,
      charges: new RedisCharges(link, ledgerMaxLen),
    });
    this.link = link;
    this.bus = bus;
    this.clock = options.clock;
    this.localTier = tier;
    if (tier) {
      onReconnect(link.client, () => tier.clear());
      this.cachePeek = (key) => tier.peek(key);
    }
  }

  override async ping(): Promise<void> {
    await this.link.run(() => this.link.client.ping());
  }

  /** Redis server time, ms since the epoch (the money clock: cost/money-clock.ts). */
  override async serverTimeMs(): Promise<number> {
    const [seconds, micros] = await this.link.run(() => this.link.client.time());
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** Redis server time minus the gateway clock, in ms (positive: Redis is ahead). */
  async serverTimeSkewMs(): Promise<number> {
    return (await this.serverTimeMs()) - this.clock.now();
  }

  override async close(): Promise<void> {
    await this.localTier?.close();
    await Promise.all([this.bus.close(), quit(this.link.client)]);
  }
}
