// FinanceStore: what finance changes at run time, kept apart from the money counters: budget
// overrides (a cap set through PUT /admin/budgets, with its version, who and why) and the audit
// trail of every admin mutation. One interface, a backend beside it per storage
// (memory-finance-store.ts, redis-finance-store.ts), one factory (create-finance-store.ts), one
// contract suite (test/contract/finance-contract.ts) that every backend passes.
//
// The rule every backend keeps: writeBudget() stores the budget AND appends its audit entry AND
// bumps the settings version in ONE atomic step (memory: one synchronous block; Redis: one Lua
// script), after a compare on the budget's version; a refused compare writes nothing. A
// PostgreSQL or SQLite money backend implements it as one transaction: `SELECT ... FOR UPDATE`
// the budget row, compare its version, `UPSERT` the row, `INSERT` the audit row and
// `UPDATE finance_settings SET version = version + 1`, then COMMIT (ROLLBACK on a mismatch); the
// audit id is then the row's (at, sequence) in the same "<ms>-<seq>" form.
//
// The algorithm (what a budget's limit is, which source wins, how versions advance) lives in
// budget-overrides.ts and budget-routes.ts once; backends only store and compare.
//
// Must never: change an audit entry once appended, return audit entries out of id order, keep an
// entry older than AUDIT_RETENTION_MS past the next append, or write a budget without its entry.
import type { Period } from '../cost/budget-periods.ts';

/** How long audit entries are kept (400 days): trimmed on each append. */
export const AUDIT_RETENTION_MS = 400 * 86_400_000;

/** The budget scope of the global caps in URLs, storage and the audit trail. */
export const GLOBAL_SCOPE = '_global';

/** One budget as finance set it (source "admin") or returned to the config value (source "config"). */
export interface StoredBudget {
  /** An app's name, or GLOBAL_SCOPE. */
  scope: string;
  period: Period;
  /** "admin": limitMinor / softMinor below win over the config; "config": the YAML value applies. */
  source: 'admin' | 'config';
  /** null: no hard cap (source "admin"), or nothing stored (source "config"). */
  limitMinor: number | null;
  softMinor: number | null;
  /** 1 on the first change, +1 on every change (a DELETE too): what If-Match compares. */
  version: number;
  updatedBy: string;
  updatedAt: number;
  reason: string;
}

/** What an audit entry says (the backend adds its id). */
export interface AuditRecord {
  at: number;
  /** The admin token's name ("admin" for admin.tokenHash; "SIGHUP" for a signal reload). */
  actor: string;
  role: string;
  /** The client's address as the server saw it (server.trustProxy decides whose). */
  client: string;
  requestId: string;
  /** budget_set, budget_reset, cache_purge, reload, reconcile, webhooks_redeliver, prices_refresh. */
  action: string;
  /** What was acted on: "budget:crm:day", "cache:7707083893", "config", ... */
  target: string;
  before: unknown;
  after: unknown;
  reason: string | null;
}

export interface AuditEntry extends AuditRecord {
  /** "<ms>-<seq>": ordered; ms is `at` (or the last entry's, when `at` is earlier). */
  id: string;
}

export interface AuditQuery {
  /** Inclusive, ms. */
  from: number;
  /** Exclusive, ms. */
  to: number;
  actor?: string;
  action?: string;
  /** Only entries after this id (the previous page's next cursor). */
  after?: string;
  limit: number;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** The id to pass as `after` for the next page; null when the range is exhausted. */
  next: string | null;
}

export interface BudgetWrite {
  budget: StoredBudget;
  /** The stored budget's version this write was computed from (0: none stored). */
  expectVersion: number;
  audit: AuditRecord;
}

export type BudgetWriteResult =
  | { ok: true; settingsVersion: number; auditId: string }
  | { ok: false; current: StoredBudget | null };

export interface FinanceStore {
  readonly kind: 'memory' | 'redis' | 'postgres' | 'sqlite';
  /** Bumped by every budget write: a replica compares it to its copy's (the reserve path). */
  settingsVersion(): Promise<number>;
  /** Every stored budget and the settings version they make up, read together. */
  readBudgets(): Promise<{ settingsVersion: number; budgets: StoredBudget[] }>;
  /** The stored budget of one scope and period, or null. */
  readBudget(scope: string, period: Period): Promise<StoredBudget | null>;
  /** Compare-and-set plus audit append plus version bump, atomically (see the header). */
  writeBudget(write: BudgetWrite): Promise<BudgetWriteResult>;
  /** Appends an entry of a mutation that is not a budget (purge, reload, ...). */
  appendAudit(record: AuditRecord): Promise<AuditEntry>;
  readAudit(query: AuditQuery): Promise<AuditPage>;
  close(): Promise<void>;
}

/** Orders two audit ids ("<ms>-<seq>"). */
export function compareAuditIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am === bm ? as - bs : am - bm;
}

/** A well-formed audit cursor ("<ms>-<seq>"). */
export const AUDIT_ID = /^\d{1,16}-\d{1,16}$/;

/** An audit id's ms for an entry at `at`: floored, never below 0 (the same on every backend). */
export function auditIdMs(at: number): number {
  return Math.max(0, Math.floor(at));
}

/** The id of the next entry given the last one and the new entry's time (never going back). */
export function nextAuditId(last: string | null, at: number): string {
  const ms = auditIdMs(at);
  // "0-0" is no valid id (Redis streams refuse it).
  if (last === null) return ms === 0 ? '0-1' : `${ms}-0`;
  const [lastMs, lastSeq] = last.split('-').map(Number) as [number, number];
  return ms > lastMs ? `${ms}-0` : `${lastMs}-${lastSeq + 1}`;
}

/** True when an entry passes a query's actor and action filters. */
export function auditMatches(entry: AuditRecord, query: Pick<AuditQuery, 'actor' | 'action'>): boolean {
  return (
    (query.actor === undefined || entry.actor === query.actor) &&
    (query.action === undefined || entry.action === query.action)
  );
}

/** Checks a budget write's shape before any backend stores it (both backends call this). */
export function checkBudgetWrite(write: BudgetWrite): void {
  const { budget } = write;
  const amount = (v: number | null) => v === null || (Number.isSafeInteger(v) && v >= 0);
  if (!amount(budget.limitMinor) || !amount(budget.softMinor))
    throw new RangeError('finance: a budget amount must be a non-negative integer or null');
  if (!Number.isSafeInteger(write.expectVersion) || write.expectVersion < 0)
    throw new RangeError('finance: expectVersion must be a non-negative integer');
  if (budget.version !== write.expectVersion + 1)
    throw new RangeError('finance: a write must advance the version by one');
}

/** The columns of a stored budget in the SQL backends (PostgreSQL, SQLite), in this order. */
export const BUDGET_COLUMNS =
  'scope, period, source, limit_minor, soft_minor, version, updated_by, updated_at, reason';

/** A stored budget from an SQL row of BUDGET_COLUMNS (numbers may come as text or numbers). */
export function budgetOfRow(row: Record<string, unknown>): StoredBudget {
  const amount = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    scope: String(row.scope),
    period: String(row.period) as Period,
    source: String(row.source) as StoredBudget['source'],
    limitMinor: amount(row.limit_minor),
    softMinor: amount(row.soft_minor),
    version: Number(row.version),
    updatedBy: String(row.updated_by),
    updatedAt: Number(row.updated_at),
    reason: String(row.reason),
  };
}
