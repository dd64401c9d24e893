// The spend ledger, read side: one entry per charge (time, app, operation, INN, amount, upstream
// and gateway request ids, idempotency key, whether the reconciler recorded it), durable in the
// Store (a Redis stream with Redis), exported as JSON or CSV. Entries are written only by the
// money role's recordCharge (charge-book.ts), claimed by idempotency key in the same atomic step,
// so an upstream replay of a charge already recorded is never recorded twice.
import type { LedgerStore } from '../store/store.ts';

export interface SpendEntry {
  at: number;
  app: string;
  operation: string;
  kind: string;
  inn: string | null;
  amountMinor: number;
  upstreamRequestId: string | null;
  requestId: string;
  idempotencyKey: string | null;
  /** Recorded by the reconciler (the call's own answer never came back). */
  reconciled?: boolean;
}

export class SpendLedger {
  constructor(private readonly store: LedgerStore) {}

  async read(fromMs: number, toMs: number, app?: string, limit = 100_000): Promise<SpendEntry[]> {
    const records = await this.store.readLedger(fromMs, toMs, limit);
    const entries = records.map((r) => ({
      at: Number(r.at),
      app: String(r.app),
      operation: String(r.operation),
      kind: String(r.kind),
      inn: r.inn === null || r.inn === undefined || r.inn === '' ? null : String(r.inn),
      amountMinor: Number(r.amountMinor),
      upstreamRequestId: r.upstreamRequestId ? String(r.upstreamRequestId) : null,
      requestId: String(r.requestId),
      idempotencyKey: r.idempotencyKey ? String(r.idempotencyKey) : null,
      ...(r.reconciled === true || r.reconciled === 'true' || r.reconciled === '1'
        ? { reconciled: true }
        : {}),
    }));
    return app ? entries.filter((e) => e.app === app) : entries;
  }
}

const CSV_COLUMNS = [
  'time',
  'app',
  'operation',
  'kind',
  'inn',
  'amount_minor',
  'upstream_request_id',
  'request_id',
  'idempotency_key',
  'reconciled',
] as const;

function csvCell(value: string | number | null): string {
  const s = value === null ? '' : String(value);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function ledgerCsv(entries: readonly SpendEntry[]): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const e of entries) {
    lines.push(
      [
        new Date(e.at).toISOString(),
        e.app,
        e.operation,
        e.kind,
        e.inn,
        e.amountMinor,
        e.upstreamRequestId,
        e.requestId,
        e.idempotencyKey,
        e.reconciled ? 'true' : 'false',
      ]
        .map(csvCell)
        .join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}
