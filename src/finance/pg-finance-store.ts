// The FinanceStore on PostgreSQL, for a gateway whose money lives there (store.postgresUrl):
// budget overrides, the settings version and the audit trail in the `cpgw` schema (migration 3
// in store/postgres/migrations.ts), on the money store's own pool (PgLink), so PostgreSQL is the
// system of record for them as for the ledger and the counters, and any number of replicas on one
// database see one override.
//
//   cpgw.budget_settings   one row per (scope, period) finance set, its version, who and why
//   cpgw.finance_settings  the settings version (one row; bumped by every budget write)
//   cpgw.audit             one row per admin mutation, id "<ms>-<seq>" (cpgw.audit_head)
//
// A budget write is ONE call of cpgw.write_budget (one transaction): lock the settings row and
// the budget row, compare the budget's version, upsert it, append the audit row (trimming rows
// older than AUDIT_RETENTION_MS), bump the settings version; a refused compare writes nothing.
//
// Must never: write a budget without its audit row, or close a pool it was given.
import type { Period } from '../cost/budget-periods.ts';
import type { PgLink } from '../store/postgres/pg-link.ts';
import {
  AUDIT_RETENTION_MS,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
  type AuditRecord,
  auditIdMs,
  BUDGET_COLUMNS,
  type BudgetWrite,
  type BudgetWriteResult,
  budgetOfRow,
  checkBudgetWrite,
  type FinanceStore,
  type StoredBudget,
} from './finance-store.ts';

export interface PgFinanceStoreOptions {
  /** The money store's link (its pool); closed by close() only when `ownsLink`. */
  link: PgLink;
  ownsLink?: boolean;
}

export class PgFinanceStore implements FinanceStore {
  readonly kind = 'postgres' as const;
  private readonly link: PgLink;
  private readonly ownsLink: boolean;

  constructor(options: PgFinanceStoreOptions) {
    this.link = options.link;
    this.ownsLink = options.ownsLink ?? false;
  }

  async settingsVersion(): Promise<number> {
    const { rows } = await this.link.query<{ version: string }>(
      'SELECT version FROM cpgw.finance_settings WHERE one',
    );
    return Number(rows[0]?.version ?? 0);
  }

  async readBudgets(): Promise<{ settingsVersion: number; budgets: StoredBudget[] }> {
    // One statement: one snapshot, so the version and the rows belong together.
    const { rows } = await this.link.query<{ version: string; budgets: Record<string, unknown>[] | null }>(
      `SELECT (SELECT version FROM cpgw.finance_settings WHERE one) AS version,
              (SELECT json_agg(b ORDER BY b.scope, b.period) FROM
                 (SELECT ${BUDGET_COLUMNS} FROM cpgw.budget_settings) b) AS budgets`,
    );
    const row = rows[0];
    return { settingsVersion: Number(row?.version ?? 0), budgets: (row?.budgets ?? []).map(budgetOfRow) };
  }

  async readBudget(scope: string, period: Period): Promise<StoredBudget | null> {
    const { rows } = await this.link.query(
      `SELECT ${BUDGET_COLUMNS} FROM cpgw.budget_settings WHERE scope = $1 AND period = $2`,
      [scope, period],
    );
    return rows[0] ? budgetOfRow(rows[0]) : null;
  }

  async writeBudget(write: BudgetWrite): Promise<BudgetWriteResult> {
    checkBudgetWrite(write);
    const { rows } = await this.link.query<{ r: Record<string, unknown> }>(
      'SELECT cpgw.write_budget($1, $2, $3, $4, $5) AS r',
      [
        JSON.stringify(write.budget),
        write.expectVersion,
        auditIdMs(write.audit.at),
        JSON.stringify(write.audit),
        AUDIT_RETENTION_MS,
      ],
    );
    const r = rows[0]!.r;
    if (r.ok !== true) {
      const current = r.current as StoredBudget | null;
      return { ok: false, current: current ? { ...current } : null };
    }
    return { ok: true, settingsVersion: Number(r.settingsVersion), auditId: String(r.auditId) };
  }

  async appendAudit(record: AuditRecord): Promise<AuditEntry> {
    const json = JSON.stringify(record);
    const { rows } = await this.link.query<{ id: string }>('SELECT cpgw.append_audit($1, $2, $3) AS id', [
      auditIdMs(record.at),
      json,
      AUDIT_RETENTION_MS,
    ]);
    return { ...(JSON.parse(json) as AuditRecord), id: rows[0]!.id };
  }

  async readAudit(query: AuditQuery): Promise<AuditPage> {
    const from = Math.max(0, Math.ceil(query.from));
    const to = Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(query.to));
    if (to <= from || query.limit <= 0) return { entries: [], next: null };
    const values: unknown[] = [from, to];
    let where = 'ms >= $1 AND ms < $2';
    if (query.after !== undefined) {
      const [ms, seq] = query.after.split('-').map(Number) as [number, number];
      values.push(ms, seq);
      where += ` AND (ms, seq) > ($${values.length - 1}, $${values.length})`;
    }
    if (query.actor !== undefined) {
      values.push(query.actor);
      where += ` AND actor = $${values.length}`;
    }
    if (query.action !== undefined) {
      values.push(query.action);
      where += ` AND action = $${values.length}`;
    }
    const limit = Math.floor(Math.min(query.limit, 10_000));
    values.push(limit + 1);
    const { rows } = await this.link.query<{ id: string; record: AuditRecord }>(
      `SELECT id, record FROM cpgw.audit WHERE ${where} ORDER BY ms, seq LIMIT $${values.length}`,
      values,
    );
    const entries = rows.slice(0, limit).map((r) => ({ ...r.record, id: r.id }));
    return { entries, next: rows.length > limit ? entries.at(-1)!.id : null };
  }

  async close(): Promise<void> {
    if (this.ownsLink) await this.link.close();
  }
}
