// A Store whose money roles (budgets, ledger, charges) live in a system of record (PostgreSQL:
// postgres/postgres-money.ts) while the hot roles (cache, state, slots, bus) stay on the memory
// or Redis store: Redis then keeps hot state only, and losing it loses no money figure.
// ping() and close() cover both; open() prepares the money backend (connect, migrate); the
// money backend's clock is the money clock (serverTimeMs).
//
// Must never: route a money role to the hot store, or serve before open() when the gateway
// starts (main.ts calls it).
import type { BudgetStore } from './budget-store.ts';
import type { ChargeStore } from './charge-store.ts';
import { ComposedStore } from './composed-store.ts';
import type { LedgerStore } from './ledger-store.ts';
import type { Store } from './store.ts';

/** What a money backend provides: the three money roles and its own lifecycle. */
export interface MoneyBackend {
  readonly kind: string;
  readonly budgets: BudgetStore;
  readonly ledger: LedgerStore;
  readonly charges: ChargeStore;
  open(): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
  /** The money store's clock: budget periods and leases follow it (cost/money-clock.ts). */
  serverTimeMs?(): Promise<number>;
}

export class SplitStore extends ComposedStore {
  override readonly kind: Store['kind'];
  /** Where money lives ('postgres'). */
  readonly moneyKind: string;
  override readonly cachePeek?: (key: string) => Buffer | null;

  constructor(
    readonly hot: Store,
    readonly money: MoneyBackend,
  ) {
    super({
      cache: hot,
      state: hot,
      slots: hot,
      bus: hot,
      budgets: money.budgets,
      ledger: money.ledger,
      charges: money.charges,
    });
    this.kind = hot.kind;
    this.moneyKind = money.kind;
    if (hot.cachePeek) this.cachePeek = (key) => hot.cachePeek!(key);
  }

  override async serverTimeMs(): Promise<number> {
    if (this.money.serverTimeMs) return this.money.serverTimeMs();
    if (this.hot.serverTimeMs) return this.hot.serverTimeMs();
    throw new Error('no store clock');
  }

  override async open(): Promise<void> {
    await this.money.open();
  }

  override async ping(): Promise<void> {
    await Promise.all([this.hot.ping(), this.money.ping()]);
  }

  override async close(): Promise<void> {
    await Promise.all([this.hot.close(), this.money.close()]);
  }
}
