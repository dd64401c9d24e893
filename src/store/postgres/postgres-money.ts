// The money roles (budgets, ledger, charges) on PostgreSQL, for a Store whose hot roles live in
// memory or Redis (split-store.ts). open() connects, refuses a wrong URL or password and a schema
// newer than this code in one line (the password never in it), and migrates; a sweep drops expired
// claims, windows, holds and counters every few minutes.
//
// Must never: serve before open() succeeded, or print the URL's password.
import type { BudgetStore } from '../budget-store.ts';
import type { ChargeStore } from '../charge-store.ts';
import type { LedgerStore } from '../ledger-store.ts';
import { migrate, SchemaError } from './migrate.ts';
import { PgBudgets } from './pg-budgets.ts';
import { PgCharges } from './pg-charges.ts';
import { PgLedger } from './pg-ledger.ts';
import { PgLink, type PgLinkOptions, scrub } from './pg-link.ts';

export interface PostgresMoneyOptions extends PgLinkOptions {
  /** open() applies missing migrations (the gateway does); false: it only checks the version. */
  migrate?: boolean;
  /** How often expired rows are swept. Default 5 minutes; 0 = never. */
  sweepMs?: number;
}

/** A store that cannot be used as configured (refused at start, one line). */
export class MoneyStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoneyStoreError';
  }
}

export class PostgresMoney {
  readonly kind = 'postgres' as const;
  readonly link: PgLink;
  readonly budgets: BudgetStore;
  readonly ledger: LedgerStore;
  readonly charges: ChargeStore;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly options: PostgresMoneyOptions) {
    this.link = new PgLink(options);
    this.budgets = new PgBudgets(this.link);
    this.ledger = new PgLedger(this.link);
    this.charges = new PgCharges(this.link);
  }

  /** Connects, checks and migrates the schema; throws MoneyStoreError with one printable line. */
  async open(): Promise<void> {
    try {
      await migrate(this.link.pool, this.options.migrate ?? true);
    } catch (error) {
      const message = scrub(error instanceof Error ? error.message : String(error), this.options.url);
      if (error instanceof SchemaError) throw new MoneyStoreError(`postgres ${this.link.where}: ${message}`);
      throw new MoneyStoreError(`cannot use postgres at ${this.link.where}: ${message.split('\n')[0]}`);
    }
    const every = this.options.sweepMs ?? 300_000;
    if (every > 0) {
      // A sweep that fails for a reason other than the connection (told once by the link) is
      // told each time: expired rows would otherwise pile up unseen.
      this.sweeper = setInterval(
        () => void this.sweep().catch((error: unknown) => this.link.report('sweep', error)),
        every,
      );
      this.sweeper.unref();
    }
  }

  async sweep(): Promise<void> {
    await this.link.query('SELECT cpgw.sweep()');
  }

  async ping(): Promise<void> {
    await this.link.query('SELECT 1');
  }

  /** The database's clock (the money clock: cost/money-clock.ts), ms since the epoch. */
  async serverTimeMs(): Promise<number> {
    const { rows } = await this.link.query<{ ms: string }>(
      'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms',
    );
    return Number(rows[0]!.ms);
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await this.link.close();
  }
}
