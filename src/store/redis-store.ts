// The shared Store: any number of gateway replicas on one Redis (ioredis). Every multi-step
// operation is one Lua script (redis-scripts.ts); key names and hash tags are in redis-keys.ts.
//
// Time: budget holds and limiter windows use Redis server time (TIME inside the scripts), so
// replicas agree whatever their own clocks say. Budget periods ("day:2026-01-15") are chosen by
// callers from the gateway clock, so the gateway's clock and Redis's must be roughly in sync;
// serverTimeSkewMs() measures it for readiness checks.
//
// Failure: commands fail fast (connect timeout, command timeout, one retry, no offline queue once
// connected) with StoreUnavailableError; the client keeps reconnecting in the background.
// Pub/sub is a wake-up hint: messages published while a subscriber is disconnected are lost.
//
// Must never: hang a request on a dead Redis, block the event loop, or touch keys outside its prefix.
import type { Redis } from 'ioredis';
import type { Clock } from '../clock.ts';
import {
  type ConnectionOptions,
  isNoScript,
  openClient,
  quit,
  toStoreError,
  watchClient,
} from './redis-connection.ts';
import { RedisKeys } from './redis-keys.ts';
import {
  CACHE_ACCOUNT,
  INCR_BY,
  LEDGER_APPEND,
  LIMITER_STATE,
  type LuaScript,
  PAUSE_CLASS,
  READ_COUNTERS,
  RELEASE_LOCK,
  RESERVE,
  SETTLE,
  TAG_ADD,
  TAG_TAKE,
  TAKE_SLOTS,
} from './redis-scripts.ts';
import type {
  CacheSetOptions,
  CounterState,
  LedgerRecord,
  LimitClassSpec,
  LimitClassState,
  ReserveRequest,
  ReserveResult,
  Store,
  TakeResult,
} from './store.ts';
import {
  DEFAULT_KEYS_LIMIT,
  DEFAULT_LEDGER_READ_LIMIT,
  isNoPause,
  limitClasses,
  minorOf,
  ttlOf,
  uniqueCounters,
  uniqueStrings,
} from './store-util.ts';

export interface RedisStoreOptions extends ConnectionOptions {
  url: string;
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
}

export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  private readonly client: Redis;
  private subscriber: Redis | null = null;
  private readonly k: RedisKeys;
  private readonly clock: Clock;
  private readonly cacheMaxBytes: number;
  private readonly ledgerMaxLen: number;
  private readonly onError: (error: unknown) => void;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();

  constructor(options: RedisStoreOptions) {
    this.k = new RedisKeys(options.prefix ?? 'cpgw:');
    this.clock = options.clock;
    this.cacheMaxBytes = options.cacheMaxBytes ?? Number.MAX_SAFE_INTEGER;
    this.ledgerMaxLen = options.ledgerMaxLen ?? 1_000_000;
    this.onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
    this.client = openClient(options.url, options, this.onError);
  }

  // --- cache ---

  async cacheGet(key: string): Promise<Buffer | null> {
    return this.run(() => this.client.getBuffer(this.k.cache(key)));
  }

  async cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void> {
    const ttl = ttlOf(options.ttlMs);
    const size = Math.max(1, value.length + Buffer.byteLength(key));
    if (size > this.cacheMaxBytes) return this.cacheDelete(key);
    const entry = this.k.cache(key);
    await this.run(() =>
      Promise.all([
        this.client.set(entry, value, 'PX', ttl),
        this.eval(CACHE_ACCOUNT, this.accountKeys(), ['set', entry, size, ttl]),
        ...uniqueStrings(options.tags ?? []).map((tag) =>
          this.eval(TAG_ADD, [this.k.cacheTag(tag)], [entry, ttl]),
        ),
      ]),
    );
  }

  async cacheDelete(key: string): Promise<void> {
    const entry = this.k.cache(key);
    await this.run(() =>
      Promise.all([this.client.del(entry), this.eval(CACHE_ACCOUNT, this.accountKeys(), ['del', entry])]),
    );
  }

  async cachePurgeTag(tag: string): Promise<number> {
    return this.run(async () => {
      const entries = (await this.eval(TAG_TAKE, [this.k.cacheTag(tag)], [])) as string[];
      if (entries.length === 0) return 0;
      const deleted = await Promise.all(entries.map((entry) => this.client.del(entry)));
      await this.eval(CACHE_ACCOUNT, this.accountKeys(), ['del', ...entries]);
      return deleted.reduce((sum, n) => sum + n, 0);
    });
  }

  async cacheBytes(): Promise<number> {
    return this.run(async () => Number(await this.eval(CACHE_ACCOUNT, this.accountKeys(), ['read'])));
  }

  private accountKeys(): string[] {
    return [this.k.cacheSizes, this.k.cacheExpiry, this.k.cacheBytes];
  }

  // --- state ---

  async get(key: string): Promise<string | null> {
    return this.run(() => this.client.get(this.k.state(key)));
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const ttl = ttlOf(ttlMs);
    await this.run(() => this.client.set(this.k.state(key), value, 'PX', ttl));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = ttlOf(ttlMs);
    return this.run(async () => (await this.client.set(this.k.state(key), value, 'PX', ttl, 'NX')) === 'OK');
  }

  async del(key: string): Promise<void> {
    await this.run(() => this.client.del(this.k.state(key)));
  }

  async incrBy(key: string, amount: number, ttlMs: number): Promise<number> {
    const ttl = ttlOf(ttlMs);
    minorOf(amount, 'amount');
    return this.run(async () => Number(await this.eval(INCR_BY, [this.k.state(key)], [amount, ttl])));
  }

  async keys(prefix: string, limit = DEFAULT_KEYS_LIMIT): Promise<string[]> {
    return this.run(async () => {
      const found = new Set<string>();
      for (const pattern of this.k.statePatterns(prefix)) {
        let cursor = '0';
        do {
          const [next, batch] = await this.client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          for (const redisKey of batch) {
            const logical = this.k.logicalState(redisKey);
            if (logical?.startsWith(prefix) && found.size < limit) found.add(logical);
          }
        } while (cursor !== '0' && found.size < limit);
      }
      return [...found];
    });
  }

  // --- locks ---

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.setIfAbsent(key, owner, ttlMs);
  }

  async releaseLock(key: string, owner: string): Promise<boolean> {
    return this.run(async () => Number(await this.eval(RELEASE_LOCK, [this.k.state(key)], [owner])) === 1);
  }

  // --- pub/sub: one extra connection, shared by every subscription ---

  async publish(channel: string, message: string): Promise<void> {
    await this.run(() => this.client.publish(this.k.channel(channel), message));
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const name = this.k.channel(channel);
    const listener = (message: string) => {
      try {
        handler(message);
      } catch (error) {
        this.onError(error);
      }
    };
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
      const sub = this.subscriberConnection();
      this.subscribing.set(name, sub.subscribe(name));
    }
    set.add(listener);
    try {
      await this.run(() => this.subscribing.get(name) ?? Promise.resolve());
    } catch (error) {
      set.delete(listener);
      if (set.size === 0 && this.handlers.get(name) === set) {
        this.handlers.delete(name);
        this.subscribing.delete(name);
      }
      throw error;
    }
    return async () => {
      if (!set.delete(listener) || set.size > 0 || this.handlers.get(name) !== set) return;
      this.handlers.delete(name);
      this.subscribing.delete(name);
      await this.run(() => this.subscriberConnection().unsubscribe(name));
    };
  }

  private subscriberConnection(): Redis {
    if (!this.subscriber) {
      const sub = watchClient(this.client.duplicate({ enableOfflineQueue: true }), this.onError);
      sub.on('message', (channel: string, message: string) => {
        for (const listener of this.handlers.get(channel) ?? []) listener(message);
      });
      this.subscriber = sub;
    }
    return this.subscriber;
  }

  // --- budgets ---

  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const amount = minorOf(request.amountMinor);
    const holdMs = ttlOf(request.holdMs, 'holdMs');
    const specs = uniqueCounters(request.counters);
    if (specs.length === 0) return { ok: true };
    const args: (string | number)[] = [request.id, amount, holdMs];
    for (const spec of specs)
      args.push(spec.limitMinor === null ? '' : minorOf(spec.limitMinor), ttlOf(spec.ttlMs));
    const reply = await this.run(
      async () => (await this.eval(RESERVE, this.counterKeys(specs.map((s) => s.key)), args)) as number[],
    );
    if (reply[0] === 1) return { ok: true };
    const spec = specs[Number(reply[1]) - 1]!;
    return {
      ok: false,
      key: spec.key,
      limitMinor: spec.limitMinor ?? 0,
      spentMinor: Number(reply[2]),
      reservedMinor: Number(reply[3]),
    };
  }

  async settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void> {
    await this.settleScript(id, counterKeys, String(minorOf(actualMinor, 'actualMinor')), ttlOf(ttlMs));
  }

  async release(id: string, counterKeys: string[]): Promise<void> {
    await this.settleScript(id, counterKeys, '', 1);
  }

  async addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void> {
    await this.settleScript('', counterKeys, String(minorOf(amountMinor)), ttlOf(ttlMs));
  }

  async readCounters(keys: string[]): Promise<CounterState[]> {
    if (keys.length === 0) return [];
    const reply = await this.run(
      async () => (await this.eval(READ_COUNTERS, this.counterKeys(keys), [])) as number[],
    );
    return keys.map((key, i) => ({
      key,
      spentMinor: Number(reply[2 * i]),
      reservedMinor: Number(reply[2 * i + 1]),
    }));
  }

  private async settleScript(id: string, keys: string[], amount: string, ttl: number): Promise<void> {
    const unique = uniqueStrings(keys);
    if (unique.length === 0) return;
    await this.run(() => this.eval(SETTLE, this.counterKeys(unique), [id, amount, ttl]));
  }

  private counterKeys(keys: string[]): string[] {
    return keys.flatMap((key) => [this.k.budgetCounter(key), this.k.budgetHolds(key)]);
  }

  // --- rate limits ---

  async takeSlots(classes: LimitClassSpec[], id: string): Promise<TakeResult> {
    const specs = limitClasses(classes);
    if (specs.length === 0) return { ok: true };
    const args: (string | number)[] = [id];
    for (const spec of specs) args.push(spec.limit, Math.ceil(spec.windowMs));
    const reply = await this.run(
      async () => (await this.eval(TAKE_SLOTS, this.classKeys(specs.map((s) => s.name)), args)) as number[],
    );
    if (reply[0] === 1) return { ok: true };
    return { ok: false, name: specs[Number(reply[1]) - 1]!.name, retryAfterMs: Number(reply[2]) };
  }

  async returnSlots(classNames: string[], id: string): Promise<void> {
    const names = uniqueStrings(classNames);
    await this.run(() => Promise.all(names.map((name) => this.client.zrem(this.k.slots(name), id))));
  }

  async pauseClass(name: string, durationMs: number): Promise<void> {
    if (isNoPause(durationMs)) return;
    const duration = ttlOf(durationMs, 'durationMs');
    await this.run(() => this.eval(PAUSE_CLASS, [this.k.pause(name)], [duration]));
  }

  async limiterState(classes: LimitClassSpec[]): Promise<LimitClassState[]> {
    if (classes.length === 0) return [];
    const windows = classes.map((c) => Math.ceil(ttlOf(c.windowMs, 'windowMs')));
    const reply = await this.run(
      async () =>
        (await this.eval(LIMITER_STATE, this.classKeys(classes.map((c) => c.name)), windows)) as number[],
    );
    return classes.map((c, i) => ({
      name: c.name,
      used: Number(reply[2 * i]),
      pausedForMs: Number(reply[2 * i + 1]),
    }));
  }

  private classKeys(names: string[]): string[] {
    return names.flatMap((name) => [this.k.slots(name), this.k.pause(name)]);
  }

  // --- ledger: a stream whose ids follow the records' `at` ---

  async appendLedger(record: LedgerRecord): Promise<string> {
    if (!Number.isFinite(record.at) || record.at < 0) throw new RangeError(`ledger: bad at ${record.at}`);
    const body = JSON.stringify({ ...record, id: undefined });
    const args = [Math.floor(record.at), body, this.ledgerMaxLen];
    return this.run(async () => String(await this.eval(LEDGER_APPEND, [this.k.ledger], args)));
  }

  async readLedger(fromMs: number, toMs: number, limit = DEFAULT_LEDGER_READ_LIMIT): Promise<LedgerRecord[]> {
    const from = Math.max(0, Math.ceil(fromMs));
    const last = Math.ceil(toMs) - 1;
    if (last < from || limit <= 0) return [];
    const entries = await this.run(() =>
      this.client.xrange(this.k.ledger, String(from), String(last), 'COUNT', limit),
    );
    return entries.map(([id, fields]) => {
      const body = fields[fields.indexOf('r') + 1] ?? '{}';
      return { ...(JSON.parse(body) as LedgerRecord), id };
    });
  }

  // --- health ---

  async ping(): Promise<void> {
    await this.run(() => this.client.ping());
  }

  /** Redis server time minus the gateway clock, in ms (positive: Redis is ahead). */
  async serverTimeSkewMs(): Promise<number> {
    const [seconds, micros] = await this.run(() => this.client.time());
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - this.clock.now();
  }

  async close(): Promise<void> {
    this.handlers.clear();
    this.subscribing.clear();
    await Promise.all([this.client, this.subscriber].map((c) => (c ? quit(c) : undefined)));
  }

  // --- plumbing ---

  /** EVALSHA, loading the script with EVAL when the server does not know it yet. */
  private async eval(script: LuaScript, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.client.eval(script.source, keys.length, ...keys, ...args);
    }
  }

  /** Runs Redis I/O, turning connection trouble into StoreUnavailableError. */
  private async run<T>(io: () => Promise<T>): Promise<T> {
    try {
      return await io();
    } catch (error) {
      throw toStoreError(error);
    }
  }
}
