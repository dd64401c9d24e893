// The Store: every piece of shared state goes through it, split by role so each module takes only
// what it needs (issue #15): cache (cache-store.ts), state and locks (state-store.ts), budgets
// (budget-store.ts), limiter slots (slot-store.ts), the ledger (ledger-store.ts), pub/sub
// (bus-store.ts) and money (charge-store.ts). `Store` is all of them plus health; one factory
// (create-store.ts) returns it. Two backends: memory/ (one process, the embedded default) and
// redis/ (any number of replicas); with a PostgreSQL URL the money roles (budgets, ledger, money)
// come from postgres/ instead and the backend above keeps the hot roles (split-store.ts).
//
// Backends only do I/O and atomicity. Policy (what a window is worth, which budget period a
// charge falls in, how long a request may wait) lives in the callers and is written once.
// Key names passed in are logical ("check:abc"); backends add the `cpgw:` prefix and, for Redis,
// the hash tag that keeps keys of one atomic operation in one cluster slot.
import type { BudgetStore } from './budget-store.ts';
import type { BusStore } from './bus-store.ts';
import type { CacheStore } from './cache-store.ts';
import type { ChargeStore } from './charge-store.ts';
import type { LedgerStore } from './ledger-store.ts';
import type { SlotStore } from './slot-store.ts';
import type { StateStore } from './state-store.ts';

export type * from './budget-store.ts';
export type * from './bus-store.ts';
export type * from './cache-store.ts';
export type * from './charge-store.ts';
export type * from './ledger-store.ts';
export type * from './slot-store.ts';
export type * from './state-store.ts';

export interface StoreRoles {
  cache: CacheStore;
  state: StateStore;
  budgets: BudgetStore;
  slots: SlotStore;
  ledger: LedgerStore;
  bus: BusStore;
  charges: ChargeStore;
}

export interface Store
  extends CacheStore,
    StateStore,
    BudgetStore,
    SlotStore,
    LedgerStore,
    BusStore,
    ChargeStore {
  readonly kind: 'memory' | 'redis';
  /**
   * The cache entry this process holds in memory, read without waiting (the memory store; the
   * Redis store's in-process tier). Absent when there is no such tier. Never reaches a backend.
   */
  cachePeek?(key: string): Buffer | null;
  /**
   * The money store's own clock, ms since the epoch (Redis TIME; PostgreSQL now()): the one clock
   * budget periods and leases follow (cost/money-clock.ts). Absent: the store has no clock of its
   * own (the in-process memory store), and the gateway's clock is the money clock.
   */
  serverTimeMs?(): Promise<number>;
  /**
   * Prepares the backend before the gateway serves (PostgreSQL money: connect, check and migrate
   * the schema); throws one printable line. Absent: nothing to prepare.
   */
  open?(): Promise<void>;
  /** Throws when the backend is unreachable (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Every method of every role, by role: one list that composition and fault injection share. */
export const ROLE_METHODS = {
  cache: [
    'cacheGet',
    'cacheGetMany',
    'cacheSet',
    'cacheDelete',
    'cacheReplace',
    'cachePurgeTag',
    'cacheBytes',
  ],
  state: [
    'get',
    'set',
    'setIfAbsent',
    'keys',
    'acquireLock',
    'releaseLock',
    'renewLock',
    'putBlob',
    'getBlob',
  ],
  budgets: ['reserve', 'settle', 'release', 'addSpend', 'readCounters'],
  slots: ['takeSlots', 'returnSlots', 'pauseClass', 'limiterState'],
  ledger: ['appendLedger', 'readLedger', 'readLedgerAfter'],
  bus: ['publish', 'subscribe'],
  charges: [
    'openCharge',
    'renewCharge',
    'takeOverCharge',
    'recordCharge',
    'releaseCharge',
    'pendingCharges',
    'isRecorded',
    'windows',
    'openWindow',
    'listWindows',
  ],
} as const satisfies { [R in keyof StoreRoles]: readonly (keyof StoreRoles[R])[] };

// A role method missing from ROLE_METHODS does not compile.
type Listed<R extends keyof StoreRoles> = (typeof ROLE_METHODS)[R][number];
type Unlisted = { [R in keyof StoreRoles]: Exclude<keyof StoreRoles[R], Listed<R>> }[keyof StoreRoles];
const allListed: [Unlisted] extends [never] ? true : Unlisted = true;
void allListed;

export type RoleMethod = { [R in keyof StoreRoles]: Listed<R> }[keyof StoreRoles];

/** Thrown by a backend when it cannot reach its storage; the gateway maps it to store_unavailable. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
