// The FinanceStore in the embedded money database (<stateDir>/money.db, store/sqlite/sqlite-db.ts,
// schema version 2), for the embedded default gateway: budget overrides, the settings version and
// the audit trail sit in the same file, on the same handle, as the money, so a restart or a
// kill -9 keeps them as it keeps the ledger (WAL, synchronous=FULL: a write answered is on disk).
//
//   budget_settings   one row per (scope, period) finance set, its version, who and why
//   finance_settings  the settings version (one row; bumped by every budget write)
//   audit             one row per admin mutation, keyed (ms, seq): the id "<ms>-<seq>"
//
// A budget write is ONE transaction (MoneyDb.tx: BEGIN IMMEDIATE ... COMMIT): read the budget row,
// compare its version, upsert it, append the audit row (trimming rows older than
// AUDIT_RETENTION_MS), bump the settings version; a refused compare or any fault rolls back.
//
// Must never: write a budget without its audit row, or close the money database (its store does).
import type { Period } from '../cost/budget-periods.ts';
import type { MoneyDb } from '../store/sqlite/sqlite-db.ts';
import {
  AUDIT_RETENTION_MS,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
  type AuditRecord,
  BUDGET_COLUMNS,
  type BudgetWrite,
  type BudgetWriteResult,
  budgetOfRow,
  checkBudgetWrite,
  type FinanceStore,
  nextAuditId,
  type StoredBudget,
} from './finance-store.ts';

export class SqliteFinanceStore implements FinanceStore {
  readonly kind = 'sqlite' as const;

  constructor(private readonly db: MoneyDb) {}

  async settingsVersion(): Promise<number> {
    return Number(this.db.get('SELECT version FROM finance_settings WHERE one = 1')?.version ?? 0);
  }

  async readBudgets(): Promise<{ settingsVersion: number; budgets: StoredBudget[] }> {
    // One process owns the file and reads run synchronously: nothing commits between the two.
    const settingsVersion = await this.settingsVersion();
    const rows = this.db.all(`SELECT ${BUDGET_COLUMNS} FROM budget_settings ORDER BY scope, period`);
    return { settingsVersion, budgets: rows.map(budgetOfRow) };
  }

  async readBudget(scope: string, period: Period): Promise<StoredBudget | null> {
    const row = this.db.get(`SELECT ${BUDGET_COLUMNS} FROM budget_settings WHERE scope = ? AND period = ?`, [
      scope,
      period,
    ]);
    return row ? budgetOfRow(row) : null;
  }

  async writeBudget(write: BudgetWrite): Promise<BudgetWriteResult> {
    checkBudgetWrite(write);
    const { budget } = write;
    const json = JSON.stringify(write.audit);
    return this.db.tx((): BudgetWriteResult => {
      const row = this.db.get(
        `SELECT ${BUDGET_COLUMNS} FROM budget_settings WHERE scope = ? AND period = ?`,
        [budget.scope, budget.period],
      );
      const current = row ? budgetOfRow(row) : null;
      if ((current?.version ?? 0) !== write.expectVersion) return { ok: false, current };
      this.db.run(
        `INSERT INTO budget_settings (${BUDGET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (scope, period) DO UPDATE SET source = excluded.source,
           limit_minor = excluded.limit_minor, soft_minor = excluded.soft_minor,
           version = excluded.version, updated_by = excluded.updated_by,
           updated_at = excluded.updated_at, reason = excluded.reason`,
        [
          budget.scope,
          budget.period,
          budget.source,
          budget.limitMinor,
          budget.softMinor,
          budget.version,
          budget.updatedBy,
          budget.updatedAt,
          budget.reason,
        ],
      );
      const auditId = this.append(write.audit, json);
      this.db.run('UPDATE finance_settings SET version = version + 1 WHERE one = 1');
      const settingsVersion = Number(
        this.db.get('SELECT version FROM finance_settings WHERE one = 1')!.version,
      );
      return { ok: true, settingsVersion, auditId };
    });
  }

  async appendAudit(record: AuditRecord): Promise<AuditEntry> {
    const json = JSON.stringify(record);
    const id = this.db.tx(() => this.append(record, json));
    return { ...(JSON.parse(json) as AuditRecord), id };
  }

  async readAudit(query: AuditQuery): Promise<AuditPage> {
    const from = Math.max(0, Math.ceil(query.from));
    const to = Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(query.to));
    if (!(to > from) || query.limit <= 0) return { entries: [], next: null };
    const params: (number | string)[] = [from, to];
    let where = 'ms >= ? AND ms < ?';
    if (query.after !== undefined) {
      const [ms, seq] = query.after.split('-').map(Number) as [number, number];
      // `ms >= ?` first: the primary key's range scan starts at the cursor (sqlite-ledger.ts).
      where += ' AND ms >= ? AND (ms > ? OR seq > ?)';
      params.push(ms, ms, seq);
    }
    if (query.actor !== undefined) {
      where += ' AND actor = ?';
      params.push(query.actor);
    }
    if (query.action !== undefined) {
      where += ' AND action = ?';
      params.push(query.action);
    }
    const limit = Math.floor(Math.min(query.limit, 10_000));
    params.push(limit + 1);
    const rows = this.db.all(
      `SELECT ms, seq, record FROM audit WHERE ${where} ORDER BY ms, seq LIMIT ?`,
      params,
    );
    const entries = rows.slice(0, limit).map((r) => ({
      ...(JSON.parse(String(r.record)) as AuditRecord),
      id: `${Number(r.ms)}-${Number(r.seq)}`,
    }));
    return { entries, next: rows.length > limit ? entries.at(-1)!.id : null };
  }

  /** Nothing: the money database belongs to its store, which closes it. */
  async close(): Promise<void> {}

  /** Inside a transaction: the next "<ms>-<seq>", the row, the retention trim. */
  private append(record: AuditRecord, json: string): string {
    const last = this.db.get('SELECT ms, seq FROM audit ORDER BY ms DESC, seq DESC LIMIT 1');
    const id = nextAuditId(last ? `${Number(last.ms)}-${Number(last.seq)}` : null, record.at);
    const [ms, seq] = id.split('-').map(Number) as [number, number];
    this.db.run('INSERT INTO audit (ms, seq, actor, action, record) VALUES (?, ?, ?, ?, ?)', [
      ms,
      seq,
      record.actor,
      record.action,
      json,
    ]);
    this.db.run('DELETE FROM audit WHERE ms < ?', [ms - AUDIT_RETENTION_MS]);
    return id;
  }
}
