// The FinanceStore in this process: budget overrides and the audit trail for a gateway without
// Redis (one replica). A budget write is one synchronous block (compare, store, append, bump), so
// nothing can run between its parts.
//
// Must never: await between the compare and the writes of writeBudget, or keep an audit entry
// older than AUDIT_RETENTION_MS behind the newest one.
import type { Period } from '../cost/budget-periods.ts';
import {
  AUDIT_RETENTION_MS,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
  type AuditRecord,
  auditMatches,
  type BudgetWrite,
  type BudgetWriteResult,
  checkBudgetWrite,
  compareAuditIds,
  type FinanceStore,
  nextAuditId,
  type StoredBudget,
} from './finance-store.ts';

const budgetKey = (scope: string, period: Period) => `${scope}:${period}`;

export class MemoryFinanceStore implements FinanceStore {
  readonly kind = 'memory' as const;
  private version = 0;
  private readonly budgets = new Map<string, StoredBudget>();
  /** Oldest first; ids ascending. */
  private readonly audit: AuditEntry[] = [];

  async settingsVersion(): Promise<number> {
    return this.version;
  }

  async readBudgets(): Promise<{ settingsVersion: number; budgets: StoredBudget[] }> {
    return { settingsVersion: this.version, budgets: [...this.budgets.values()].map((b) => ({ ...b })) };
  }

  async readBudget(scope: string, period: Period): Promise<StoredBudget | null> {
    const found = this.budgets.get(budgetKey(scope, period));
    return found ? { ...found } : null;
  }

  async writeBudget(write: BudgetWrite): Promise<BudgetWriteResult> {
    checkBudgetWrite(write);
    const key = budgetKey(write.budget.scope, write.budget.period);
    const current = this.budgets.get(key) ?? null;
    if ((current?.version ?? 0) !== write.expectVersion)
      return { ok: false, current: current ? { ...current } : null };
    // The entry first: a fault while appending leaves the budget and the version untouched.
    const entry = this.append(write.audit);
    this.budgets.set(key, { ...write.budget });
    this.version += 1;
    return { ok: true, settingsVersion: this.version, auditId: entry.id };
  }

  async appendAudit(record: AuditRecord): Promise<AuditEntry> {
    return { ...this.append(record) };
  }

  async readAudit(query: AuditQuery): Promise<AuditPage> {
    const entries: AuditEntry[] = [];
    for (const entry of this.audit) {
      if (query.after !== undefined && compareAuditIds(entry.id, query.after) <= 0) continue;
      const ms = Number(entry.id.split('-')[0]);
      if (ms < query.from) continue;
      if (ms >= query.to) break;
      if (!auditMatches(entry, query)) continue;
      if (entries.length === query.limit) return { entries, next: entries.at(-1)!.id };
      entries.push(structuredClone(entry));
    }
    return { entries, next: null };
  }

  async close(): Promise<void> {}

  private append(record: AuditRecord): AuditEntry {
    const entry: AuditEntry = {
      ...structuredClone(record),
      id: nextAuditId(this.audit.at(-1)?.id ?? null, record.at),
    };
    this.audit.push(entry);
    const cutoff = Number(entry.id.split('-')[0]) - AUDIT_RETENTION_MS;
    let drop = 0;
    while (drop < this.audit.length && Number(this.audit[drop]!.id.split('-')[0]) < cutoff) drop++;
    if (drop > 0) this.audit.splice(0, drop);
    return entry;
  }
}
