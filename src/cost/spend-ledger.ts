// The spend ledger: one entry per charge (time, app, operation, INN, amount, upstream and
// gateway request ids, idempotency key), durable in the Store (a Redis stream with Redis).
// A charge is claimed by its idempotency key first, so an upstream replay of a charge that
// is already recorded (a retry, a duplicate on another replica) is never recorded twice.
import type { LedgerStore, StateStore } from '../store/store.ts';

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
}

const CLAIM_TTL_MS = 86_400_000; // the upstream keeps idempotency keys for one day

export class SpendLedger {
  constructor(private readonly store: Pick<StateStore, 'setIfAbsent'> & LedgerStore) {}

  /** True when this request is the first to account the charge made under this key. */
  async claim(idempotencyKey: string | null, requestId: string): Promise<boolean> {
    if (!idempotencyKey) return true;
    return this.store.setIfAbsent(`charged:${idempotencyKey}`, requestId, CLAIM_TTL_MS);
  }

  async append(entry: SpendEntry): Promise<void> {
    await this.store.appendLedger({ ...entry });
  }

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
      ]
        .map(csvCell)
        .join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}
