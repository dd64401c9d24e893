// The Store: every piece of shared state (cache entries, windows, budgets, limiter slots,
// locks, check tickets, webhook de-duplication, the spend ledger) goes through this one
// interface. Two backends implement it: memory-store.ts (one process, the embedded default)
// and redis-store.ts (any number of replicas). create-store.ts picks one.
//
// Backends only do I/O and atomicity. Policy (what a window is worth, which budget period a
// charge falls in, how long a request may wait) lives in the callers and is written once.
// Key names passed in are logical ("window:7707083893"); backends add the `cpgw:` prefix and,
// for Redis, the hash tag that keeps keys of one atomic operation in one cluster slot.

export interface CacheSetOptions {
  ttlMs: number;
  /** Tags for group purge, e.g. ["inn:7707083893"]. */
  tags?: string[];
}

export interface BudgetCounterSpec {
  /** Logical counter name, e.g. "app:crm:day:2026-01-15" or "global:month:2026-01". */
  key: string;
  /** Hard cap in kopecks; null = no cap (still counted). */
  limitMinor: number | null;
  /** How long the counter lives after its last change (outlives its period). */
  ttlMs: number;
}

export interface ReserveRequest {
  /** Unique reservation id (the gateway request id is fine). */
  id: string;
  amountMinor: number;
  counters: BudgetCounterSpec[];
  /** A hold not settled or released within this time is dropped (a replica died mid-call). */
  holdMs: number;
}

export type ReserveResult =
  | { ok: true }
  | { ok: false; key: string; limitMinor: number; spentMinor: number; reservedMinor: number };

export interface CounterState {
  key: string;
  spentMinor: number;
  reservedMinor: number;
}

export interface LimitClassSpec {
  /** Class name: "key", "search", "suggest", "check". */
  name: string;
  /** Calls allowed in any window of windowMs. */
  limit: number;
  windowMs: number;
}

export type TakeResult =
  | { ok: true }
  | {
      ok: false;
      /** The class that refused. */
      name: string;
      /** When a slot of that class frees up (or its pause ends), from now. */
      retryAfterMs: number;
    };

export interface LimitClassState {
  name: string;
  /** Slots taken in the last windowMs. */
  used: number;
  /** ms until the class's pause ends; 0 when not paused. */
  pausedForMs: number;
}

export interface LedgerRecord {
  /** Set by the store on append (monotonic, time-ordered): `<ms>-<seq>`, like a Redis stream id. */
  id?: string;
  /** ms since epoch (the caller's clock). */
  at: number;
  [field: string]: string | number | boolean | null | undefined;
}

export interface Store {
  readonly kind: 'memory' | 'redis';

  // --- cache: evictable, size-bounded in memory; compressed bodies are the caller's job ---
  cacheGet(key: string): Promise<Buffer | null>;
  cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void>;
  cacheDelete(key: string): Promise<void>;
  /**
   * Deletes every cache entry carrying the tag; returns how many were still cached. (Redis may also
   * drop an entry re-set under the same key without the tag: over-purging a cache is harmless.)
   */
  cachePurgeTag(tag: string): Promise<number>;
  /** Bytes currently held by the cache (approximate for Redis: bytes this store wrote and still tracks). */
  cacheBytes(): Promise<number>;

  // --- state: never evicted before its TTL ---
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Sets only when absent; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  del(key: string): Promise<void>;
  /** Adds to an integer counter (created at 0), refreshing its TTL; returns the new value. */
  incrBy(key: string, amount: number, ttlMs: number): Promise<number>;
  /**
   * State keys (set/setIfAbsent/incrBy/locks; never cache entries) with the given logical prefix
   * (admin listings: open windows). Bounded by `limit` (default 1000); order unspecified.
   */
  keys(prefix: string, limit?: number): Promise<string[]>;

  // --- locks (charge serialization, coalescing leader) ---
  /**
   * true when `owner` now holds the lock; it expires after ttlMs unless released. Not re-entrant:
   * acquiring a lock one already holds answers false. The lock is a state key whose value is the owner.
   */
  acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases only if `owner` still holds it; true when released. */
  releaseLock(key: string, owner: string): Promise<boolean>;

  // --- pub/sub (wake coalesced followers on other replicas) ---
  publish(channel: string, message: string): Promise<void>;
  /** Returns an unsubscribe function. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;

  // --- budgets: all counters checked and held in one atomic step ---
  /**
   * Holds `amountMinor` on every counter, or on none. Refuses when spent + held + amount would pass a
   * counter's limit (reports the first such counter). Reserving again under an id that already
   * holds replaces that hold. Hold expiry: memory uses the injected clock, Redis its server time.
   */
  reserve(request: ReserveRequest): Promise<ReserveResult>;
  /**
   * Turns the hold into spend of `actualMinor` (may differ from the hold) on every counter. Spends
   * even when the hold already expired: the charge happened.
   */
  settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void>;
  /** Drops the hold without spending. */
  release(id: string, counterKeys: string[]): Promise<void>;
  /** Adds spend without a prior hold (e.g. a charge learned from a webhook). */
  addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void>;
  readCounters(keys: string[]): Promise<CounterState[]>;

  // --- rate limits: sliding window log; every class of one call taken atomically ---
  /**
   * Takes one slot of every class, or none. Redis uses the server's clock. When several classes
   * refuse, the answer names the one that frees up last. `id` should be unique per call: taking
   * again with an id that already holds a slot of a class refreshes that slot instead of adding one.
   */
  takeSlots(classes: LimitClassSpec[], id: string): Promise<TakeResult>;
  /** Gives back a slot taken by `id` (the call never left the gateway). */
  returnSlots(classNames: string[], id: string): Promise<void>;
  /**
   * Refuses the class for the next durationMs (upstream 429 Retry-After). Never shortens a longer
   * pause already in force; durationMs <= 0 changes nothing.
   */
  pauseClass(name: string, durationMs: number): Promise<void>;
  limiterState(classes: LimitClassSpec[]): Promise<LimitClassState[]>;

  // --- ledger: append-only, time-ordered ---
  appendLedger(record: LedgerRecord): Promise<string>;
  /**
   * Records with fromMs <= at < toMs, oldest first, at most `limit` (default 1000). Precisely, the
   * selection is by the record's id time: its `at`, or, for a record appended after one with a later
   * `at`, that later time (the log stays append-ordered; such a late record is found in the later slot).
   */
  readLedger(fromMs: number, toMs: number, limit?: number): Promise<LedgerRecord[]>;

  /** Throws when the backend is unreachable (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Thrown by a backend when it cannot reach its storage; the gateway maps it to store_unavailable. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
