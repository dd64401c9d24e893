// The audit trail's writing side for the admin API: one entry per admin mutation (who, from
// where, which request, what, before, after, why), the changed keys of a config reload, and the
// JSON and CSV forms of entries. Budget changes append their entry inside the FinanceStore's
// atomic budget write (budget-routes.ts); every other mutation appends after it happened.
//
// Must never: record a token, a hash or a config value in an entry (a reload records only the
// names of the keys that changed), or fail a mutation that already happened because its entry
// could not be stored (that is logged in full instead, as an error).
import type { FastifyBaseLogger } from 'fastify';
import type { AdminPrincipal } from '../auth/admin-roles.ts';
import type { Clock } from '../clock.ts';
import type { AuditEntry, AuditRecord, FinanceStore } from './finance-store.ts';

/** The request facts an entry names (fastify's request has them). */
export interface AuditSource {
  id: string;
  ip: string;
  headers: Record<string, string | string[] | undefined>;
}

/** An optional free-text reason for mutations without a body (header X-Audit-Reason). */
export const REASON_HEADER = 'x-audit-reason';
export const MAX_REASON_CHARS = 500;

export class AuditTrail {
  constructor(private readonly o: { store: FinanceStore; clock: Clock; logger: FastifyBaseLogger }) {}

  /** The record of one mutation by `who` through request `from`. */
  entry(
    who: AdminPrincipal,
    from: AuditSource,
    what: { action: string; target: string; before: unknown; after: unknown; reason?: string | null },
  ): AuditRecord {
    const header = from.headers[REASON_HEADER];
    const headerReason = typeof header === 'string' && header.trim() !== '' ? header.trim() : null;
    return {
      at: this.o.clock.now(),
      actor: who.name,
      role: who.role,
      client: from.ip,
      requestId: from.id,
      action: what.action,
      target: what.target,
      before: what.before ?? null,
      after: what.after ?? null,
      reason: (what.reason ?? headerReason)?.slice(0, MAX_REASON_CHARS) ?? null,
    };
  }

  /** Appends an entry of a mutation that already happened; a store fault is logged, not thrown. */
  async append(record: AuditRecord): Promise<AuditEntry | null> {
    try {
      return await this.o.store.appendAudit(record);
    } catch (err) {
      this.o.logger.error(
        { err: (err as Error)?.message ?? String(err), audit: record },
        'audit entry not stored; the change itself was made',
      );
      return null;
    }
  }
}

/**
 * The config keys whose values differ between two configurations, as dotted paths; apps (and
 * admin tokens) by name ("apps.crm.budgets.day.limitMinor", "admin.tokens.fin"). Values are
 * never returned: only which keys changed.
 */
export function changedConfigKeys(before: unknown, after: unknown): string[] {
  const out: string[] = [];
  walk(before, after, '', out);
  return out.sort();
}

function walk(a: unknown, b: unknown, path: string, out: string[]): void {
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  const named = (v: unknown) =>
    Array.isArray(v) &&
    v.every((x) => x && typeof x === 'object' && typeof (x as { name?: unknown }).name === 'string');
  if (named(a) && named(b)) {
    const byName = (v: unknown[]) => new Map(v.map((x) => [(x as { name: string }).name, x]));
    const ma = byName(a as unknown[]);
    const mb = byName(b as unknown[]);
    for (const name of new Set([...ma.keys(), ...mb.keys()])) {
      const p = `${path}.${name}`;
      // A token entry is named but its hash is not shown: one key per entry.
      if (!ma.has(name) || !mb.has(name) || path === 'admin.tokens') {
        if (JSON.stringify(ma.get(name)) !== JSON.stringify(mb.get(name))) out.push(p);
      } else walk(ma.get(name), mb.get(name), p, out);
    }
    return;
  }
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObject(a) && isObject(b)) {
    const oa = a as Record<string, unknown>;
    const ob = b as Record<string, unknown>;
    for (const key of new Set([...Object.keys(oa), ...Object.keys(ob)]))
      walk(oa[key], ob[key], path ? `${path}.${key}` : key, out);
    return;
  }
  out.push(path);
}

/** An entry as the admin API shows it. */
export function auditJson(e: AuditEntry) {
  return {
    id: e.id,
    time: new Date(e.at).toISOString(),
    actor: e.actor,
    role: e.role,
    client: e.client,
    request_id: e.requestId,
    action: e.action,
    target: e.target,
    before: e.before,
    after: e.after,
    reason: e.reason,
  };
}

const CSV_COLUMNS = [
  'id',
  'time',
  'actor',
  'role',
  'client',
  'request_id',
  'action',
  'target',
  'before',
  'after',
  'reason',
] as const;

function csvCell(value: unknown): string {
  let s =
    value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  // A cell a spreadsheet would run as a formula is kept as text.
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** Entries as CSV (header row first); before/after as JSON text. */
export function auditCsv(entries: readonly AuditEntry[]): string {
  const rows = entries.map((e) => {
    const j = auditJson(e);
    return CSV_COLUMNS.map((c) => csvCell(j[c])).join(',');
  });
  return `${[CSV_COLUMNS.join(','), ...rows].join('\n')}\n`;
}
