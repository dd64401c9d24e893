// The embedded Store: one process, no Redis. Cache entries live in an lru-cache bounded by bytes;
// every other piece of state (keys, locks, budgets, limiter logs, the ledger) lives in plain Maps
// that cache pressure can never evict. All time comes from the injected clock.
//
// Must never: call Date.now(), let the cache grow past cacheMaxBytes, evict state before its TTL,
// or deliver a published message synchronously (Redis never does; callers must not rely on it).
import { EventEmitter } from 'node:events';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.ts';
import { MemoryBudgets, MemorySlots } from './memory-state.ts';
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
  cleanRecord,
  DEFAULT_KEYS_LIMIT,
  DEFAULT_LEDGER_READ_LIMIT,
  isNoPause,
  ledgerId,
  minorOf,
  ttlOf,
} from './store-util.ts';

export interface MemoryStoreOptions {
  clock: Clock;
  /** Upper bound of the cache: body bytes + key bytes of every entry. */
  cacheMaxBytes: number;
  /** Ledger records kept; the oldest are dropped beyond this (counted in ledgerDropped). Default 100,000. */
  ledgerMaxRecords?: number;
  /** Called when a subscriber's handler throws. Default: process.emitWarning. */
  onError?: (error: unknown) => void;
}

interface StateEntry {
  value: string;
  expiresAt: number;
}

interface LedgerEntry {
  ms: number;
  seq: number;
  record: LedgerRecord;
}

/** Expired state is dropped lazily on read and by a full sweep every this many writes. */
const SWEEP_EVERY_WRITES = 1024;

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private readonly clock: Clock;
  private readonly onError: (error: unknown) => void;
  private readonly cache: LRUCache<string, Buffer>;
  private readonly keyTags = new Map<string, string[]>();
  private readonly tagKeys = new Map<string, Set<string>>();
  private readonly state = new Map<string, StateEntry>();
  private readonly budgets: MemoryBudgets;
  private readonly slots: MemorySlots;
  private readonly events = new EventEmitter();
  private readonly ledger: LedgerEntry[] = [];
  private ledgerHead = 0;
  private readonly ledgerMax: number;
  private dropped = 0;
  private writes = 0;

  constructor(options: MemoryStoreOptions) {
    const { clock, cacheMaxBytes } = options;
    if (!Number.isSafeInteger(cacheMaxBytes) || cacheMaxBytes <= 0) {
      throw new RangeError(`cacheMaxBytes must be a positive integer, got ${cacheMaxBytes}`);
    }
    this.clock = clock;
    this.ledgerMax = options.ledgerMaxRecords ?? 100_000;
    this.onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
    this.budgets = new MemoryBudgets(clock);
    this.slots = new MemorySlots(clock);
    this.events.setMaxListeners(0);
    this.cache = new LRUCache<string, Buffer>({
      maxSize: cacheMaxBytes,
      sizeCalculation: (value, key) => entrySize(key, value),
      // TTLs follow the injected clock; resolution 0 = ask the clock on every check (no timers).
      perf: { now: () => clock.now() },
      ttlResolution: 0,
      dispose: (_value, key) => this.unlinkTags(key),
    });
  }

  /** Ledger records dropped because the ledger exceeded ledgerMaxRecords. */
  get ledgerDropped(): number {
    return this.dropped;
  }

  // --- cache ---

  async cacheGet(key: string): Promise<Buffer | null> {
    return this.cache.get(key) ?? null;
  }

  async cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void> {
    const ttl = ttlOf(options.ttlMs);
    this.unlinkTags(key);
    this.cache.set(key, value, { ttl });
    // An entry larger than the whole bound is not stored (and any old copy is gone).
    if (!this.cache.has(key) || !options.tags?.length) return;
    const tags = [...new Set(options.tags)];
    this.keyTags.set(key, tags);
    for (const tag of tags) {
      const keys = this.tagKeys.get(tag) ?? new Set<string>();
      this.tagKeys.set(tag, keys);
      keys.add(key);
    }
  }

  async cacheDelete(key: string): Promise<void> {
    this.cache.delete(key);
  }

  async cachePurgeTag(tag: string): Promise<number> {
    const keys = this.tagKeys.get(tag);
    if (!keys) return 0;
    let purged = 0;
    for (const key of [...keys]) {
      if (this.cache.has(key)) purged++;
      this.cache.delete(key); // dispose unlinks its tags
    }
    this.tagKeys.delete(tag);
    return purged;
  }

  async cacheBytes(): Promise<number> {
    this.cache.purgeStale();
    return this.cache.calculatedSize;
  }

  private unlinkTags(key: string): void {
    const tags = this.keyTags.get(key);
    if (!tags) return;
    this.keyTags.delete(key);
    for (const tag of tags) {
      const keys = this.tagKeys.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.tagKeys.delete(tag);
    }
  }

  // --- state ---

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.put(key, value, ttlOf(ttlMs));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = ttlOf(ttlMs);
    if (this.live(key)) return false;
    this.put(key, value, ttl);
    return true;
  }

  async del(key: string): Promise<void> {
    this.state.delete(key);
  }

  async incrBy(key: string, amount: number, ttlMs: number): Promise<number> {
    const ttl = ttlOf(ttlMs);
    minorOf(amount, 'amount');
    const current = this.live(key)?.value ?? '0';
    if (!/^-?\d+$/.test(current)) throw new TypeError(`incrBy: value of ${key} is not an integer`);
    const next = Number(current) + amount;
    this.put(key, String(next), ttl);
    return next;
  }

  async keys(prefix: string, limit = DEFAULT_KEYS_LIMIT): Promise<string[]> {
    const now = this.clock.now();
    const found: string[] = [];
    for (const [key, entry] of this.state) {
      if (found.length >= limit) break;
      if (key.startsWith(prefix) && entry.expiresAt > now) found.push(key);
    }
    return found;
  }

  private live(key: string): StateEntry | undefined {
    const entry = this.state.get(key);
    if (entry && entry.expiresAt <= this.clock.now()) {
      this.state.delete(key);
      return undefined;
    }
    return entry;
  }

  private put(key: string, value: string, ttl: number): void {
    this.state.set(key, { value, expiresAt: this.clock.now() + ttl });
    this.wrote();
  }

  private wrote(): void {
    if (++this.writes % SWEEP_EVERY_WRITES !== 0) return;
    const now = this.clock.now();
    for (const [key, entry] of this.state) if (entry.expiresAt <= now) this.state.delete(key);
    this.budgets.sweep();
    this.slots.sweep();
  }

  // --- locks: plain state keys whose value is the owner ---

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.setIfAbsent(key, owner, ttlMs);
  }

  async releaseLock(key: string, owner: string): Promise<boolean> {
    if (this.live(key)?.value !== owner) return false;
    this.state.delete(key);
    return true;
  }

  // --- pub/sub: asynchronous delivery, like Redis ---

  async publish(channel: string, message: string): Promise<void> {
    setImmediate(() => this.events.emit(channel, message));
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const listener = (message: string) => {
      try {
        handler(message);
      } catch (error) {
        this.onError(error);
      }
    };
    this.events.on(channel, listener);
    return async () => {
      this.events.off(channel, listener);
    };
  }

  // --- budgets and rate limits (algorithms in memory-state.ts) ---

  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const result = this.budgets.reserve(request);
    this.wrote();
    return result;
  }

  async settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void> {
    this.budgets.settle(id, counterKeys, minorOf(actualMinor, 'actualMinor'), ttlOf(ttlMs));
  }

  async release(id: string, counterKeys: string[]): Promise<void> {
    this.budgets.release(id, counterKeys);
  }

  async addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void> {
    this.budgets.settle(null, counterKeys, minorOf(amountMinor), ttlOf(ttlMs));
    this.wrote();
  }

  async readCounters(keys: string[]): Promise<CounterState[]> {
    return this.budgets.read(keys);
  }

  async takeSlots(classes: LimitClassSpec[], id: string): Promise<TakeResult> {
    const result = this.slots.take(classes, id);
    this.wrote();
    return result;
  }

  async returnSlots(classNames: string[], id: string): Promise<void> {
    this.slots.giveBack(classNames, id);
  }

  async pauseClass(name: string, durationMs: number): Promise<void> {
    if (isNoPause(durationMs)) return;
    this.slots.pause(name, ttlOf(durationMs, 'durationMs'));
  }

  async limiterState(classes: LimitClassSpec[]): Promise<LimitClassState[]> {
    return this.slots.state(classes);
  }

  // --- ledger: append-ordered array with a cap ---

  async appendLedger(record: LedgerRecord): Promise<string> {
    if (!Number.isFinite(record.at) || record.at < 0) throw new RangeError(`ledger: bad at ${record.at}`);
    const last = this.ledger[this.ledger.length - 1];
    const at = Math.floor(record.at);
    const ms = last && last.ms > at ? last.ms : at;
    const seq = last && last.ms === ms ? last.seq + 1 : 0;
    const id = ledgerId(ms, seq);
    this.ledger.push({ ms, seq, record: cleanRecord({ ...record, id }) });
    if (this.ledger.length - this.ledgerHead > this.ledgerMax) {
      this.ledgerHead++;
      this.dropped++;
      if (this.ledgerHead >= 1024 && this.ledgerHead * 2 >= this.ledger.length) {
        this.ledger.splice(0, this.ledgerHead);
        this.ledgerHead = 0;
      }
    }
    return id;
  }

  async readLedger(fromMs: number, toMs: number, limit = DEFAULT_LEDGER_READ_LIMIT): Promise<LedgerRecord[]> {
    let lo = this.ledgerHead;
    let hi = this.ledger.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ledger[mid]!.ms < fromMs) lo = mid + 1;
      else hi = mid;
    }
    const out: LedgerRecord[] = [];
    for (let i = lo; i < this.ledger.length && out.length < limit; i++) {
      const entry = this.ledger[i]!;
      if (entry.ms >= toMs) break;
      out.push({ ...entry.record });
    }
    return out;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.events.removeAllListeners();
  }
}

function entrySize(key: string, value: Buffer): number {
  // lru-cache requires a positive integer; an empty body still costs its key.
  return Math.max(1, value.length + Buffer.byteLength(key));
}
