// The embedded money database's money role: the steps of memory/memory-charges.ts (the
// reference; the contract suite holds them equal), each one durable transaction over the budget
// book, the ledger and this role's tables (claims, pending, windows). A charge recorded here, or
// a pending entry opened here, is on disk before the call returns: a kill -9 or a power loss
// right after loses neither.
//
// Must never: write half of an operation, record one charge twice, shorten a window, let an
// openCharge hold expire by time before the claim's lifetime, or read Date.now().
import type { Clock } from '../../clock.ts';
import { copyWith } from '../../object-copy.ts';
import type { BudgetCounterSpec, ReserveResult } from '../budget-store.ts';
import {
  type ChargeRecord,
  type ChargeStore,
  CLAIM_TTL_MS,
  type CompanyWindows,
  DEFAULT_PENDING_LIMIT,
  DEFAULT_WINDOWS_LIMIT,
  type PendingCharge,
  type RecordResult,
  type WindowKind,
  type WindowOpening,
} from '../charge-store.ts';
import {
  holdSpecs,
  leaseArgs,
  mergeWindow,
  NO_WINDOWS,
  pendingOf,
  recordOf,
  windowEnd,
  windowOpeningOf,
} from '../charge-util.ts';
import type { WriteCounter } from '../memory/write-counter.ts';
import { uniqueStrings } from '../store-util.ts';
import type { SqliteBudgets } from './sqlite-budgets.ts';
import type { MoneyDb, Row } from './sqlite-db.ts';
import type { SqliteLedger } from './sqlite-ledger.ts';

const clone = (e: PendingCharge): PendingCharge => copyWith(e, { counters: [...e.counters] });

export class SqliteCharges implements ChargeStore {
  constructor(
    private readonly db: MoneyDb,
    private readonly clock: Clock,
    private readonly book: SqliteBudgets,
    private readonly ledger: SqliteLedger,
    private readonly writes: WriteCounter,
  ) {}

  async openCharge(p: PendingCharge, counters: BudgetCounterSpec[]): Promise<ReserveResult> {
    const entry = pendingOf(p, counters);
    const specs = holdSpecs(counters);
    const result = this.db.tx(() => {
      const r = this.book.reserve({
        id: entry.key,
        amountMinor: entry.estimateMinor,
        counters: specs,
        holdMs: CLAIM_TTL_MS,
      });
      if (r.ok) this.put(entry);
      return r;
    });
    if (result.ok) this.writes.wrote();
    return result;
  }

  async renewCharge(key: string, owner: string, leaseUntil: number, replayKey?: string): Promise<boolean> {
    const until = leaseArgs(key, leaseUntil);
    return this.db.tx(() => {
      const entry = this.pending(key);
      if (!entry || entry.owner !== owner) return false;
      entry.leaseUntil = until;
      if (replayKey) entry.replayKey = replayKey;
      this.put(entry);
      return true;
    });
  }

  async takeOverCharge(
    key: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<PendingCharge | null> {
    const until = leaseArgs(key, leaseUntil);
    return this.db.tx(() => {
      const entry = this.pending(key);
      if (!entry || entry.leaseUntil > now) return null;
      entry.owner = owner;
      entry.leaseUntil = until;
      entry.reconcileAttempts += 1;
      this.put(entry);
      return clone(entry);
    });
  }

  async recordCharge(r: ChargeRecord): Promise<RecordResult> {
    const c = recordOf(r);
    this.ledger.check(r.entry);
    const result = this.db.tx((): RecordResult => {
      const pending = this.pending(c.key);
      const held = uniqueStrings([...r.counters, ...(pending?.counters ?? [])]);
      let recorded = false;
      if (this.isClaimed(c.key)) {
        this.book.release(c.key, held);
      } else {
        recorded = true;
        this.db.run(
          `INSERT INTO claims (key, expires_at) VALUES (?, ?)
           ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at`,
          [c.key, this.clock.now() + CLAIM_TTL_MS],
        );
        this.ledger.append(r.entry);
        this.book.settle(c.key, r.counters, c.amount, c.ttl);
        this.book.release(c.key, held);
        if (c.window) this.merge(c.window.inn, c.window.kind, c.window.until, c.at);
      }
      this.db.run('DELETE FROM pending WHERE key = ?', [c.key]);
      return { recorded, windows: c.window ? this.read(c.window.inn) : null };
    });
    this.writes.wrote();
    return result;
  }

  async releaseCharge(key: string): Promise<void> {
    this.db.tx(() => {
      const pending = this.pending(key);
      if (!pending) return;
      this.book.release(key, pending.counters);
      this.db.run('DELETE FROM pending WHERE key = ?', [key]);
    });
  }

  async pendingCharges(limit = DEFAULT_PENDING_LIMIT): Promise<PendingCharge[]> {
    const n = Math.floor(Math.min(Math.max(0, limit), Number.MAX_SAFE_INTEGER));
    if (n === 0) return [];
    return this.db
      .all('SELECT entry FROM pending ORDER BY at, key LIMIT ?', [n])
      .map((row) => JSON.parse(String(row.entry)) as PendingCharge);
  }

  async isRecorded(key: string): Promise<boolean> {
    return this.isClaimed(key);
  }

  async windows(inn: string): Promise<CompanyWindows> {
    return this.read(inn);
  }

  async openWindow(inn: string, kind: WindowKind, until: number, now: number): Promise<CompanyWindows> {
    const opening = windowOpeningOf(kind);
    const result = this.db.tx(() => {
      this.merge(inn, opening, until, now);
      return this.read(inn);
    });
    this.writes.wrote();
    return result;
  }

  async listWindows(
    now: number,
    limit = DEFAULT_WINDOWS_LIMIT,
  ): Promise<Array<CompanyWindows & { inn: string }>> {
    const n = Math.floor(Math.min(Math.max(0, limit), Number.MAX_SAFE_INTEGER));
    if (n === 0) return [];
    return this.db
      .all(
        `SELECT inn, dossier_until, requisites_until FROM windows
          WHERE expires_at > ? AND MAX(dossier_until, requisites_until) > ? ORDER BY inn LIMIT ?`,
        [this.clock.now(), now, n],
      )
      .map((row) => ({ inn: String(row.inn), ...windowsOf(row) }));
  }

  /** Drops expired claims and windows. Inside a transaction. */
  sweep(): void {
    const now = this.clock.now();
    this.db.run('DELETE FROM claims WHERE expires_at <= ?', [now]);
    this.db.run('DELETE FROM windows WHERE expires_at <= ?', [now]);
  }

  private pending(key: string): PendingCharge | null {
    const row = this.db.get('SELECT entry FROM pending WHERE key = ?', [key]);
    return row ? (JSON.parse(String(row.entry)) as PendingCharge) : null;
  }

  private put(entry: PendingCharge): void {
    this.db.run(
      `INSERT INTO pending (key, at, entry) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET at = excluded.at, entry = excluded.entry`,
      [entry.key, entry.at, JSON.stringify(entry)],
    );
  }

  private isClaimed(key: string): boolean {
    return (
      this.db.get('SELECT 1 AS one FROM claims WHERE key = ? AND expires_at > ?', [key, this.clock.now()]) !==
      null
    );
  }

  /** Max-merges; the entry lives until its last window ends (measured from the caller's `now`). */
  private merge(inn: string, kind: WindowOpening, until: number, now: number): void {
    const next = mergeWindow(this.read(inn), kind, until, now);
    const left = windowEnd(next) - now;
    if (left <= 0) return;
    this.db.run(
      `INSERT INTO windows (inn, dossier_until, requisites_until, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (inn) DO UPDATE SET dossier_until = excluded.dossier_until,
         requisites_until = excluded.requisites_until, expires_at = excluded.expires_at`,
      [inn, next.dossierUntil, next.requisitesUntil, this.clock.now() + left],
    );
  }

  private read(inn: string): CompanyWindows {
    const row = this.db.get(
      'SELECT dossier_until, requisites_until FROM windows WHERE inn = ? AND expires_at > ?',
      [inn, this.clock.now()],
    );
    return row ? windowsOf(row) : { ...NO_WINDOWS };
  }
}

function windowsOf(row: Row): CompanyWindows {
  return { dossierUntil: Number(row.dossier_until), requisitesUntil: Number(row.requisites_until) };
}
