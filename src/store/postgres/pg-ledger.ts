// The PostgreSQL ledger role: cpgw.ledger, one row per record with the fields finance queries as
// columns (at, app, operation, kind, inn, amount_minor, request ids, idempotency key, reconciled)
// and the whole record as jsonb. Ids `<ms>-<seq>` come from cpgw.ledger_head, locked by each
// append until it commits, so ids follow commit order on any number of replicas.
//
// Must never: reorder or rewrite a record once appended.
import { copyWith } from '../../object-copy.ts';
import type { LedgerRecord, LedgerStore } from '../ledger-store.ts';
import { DEFAULT_LEDGER_READ_LIMIT, parseLedgerId } from '../store-util.ts';
import type { PgLink } from './pg-link.ts';

/** The stored body of a record: JSON-clean, without its id (the row's). Checks `at` first. */
export function ledgerBody(record: LedgerRecord): string {
  if (!Number.isFinite(record.at) || record.at < 0) throw new RangeError(`ledger: bad at ${record.at}`);
  return JSON.stringify(copyWith(record, { id: undefined }));
}

export class PgLedger implements LedgerStore {
  constructor(private readonly link: PgLink) {}

  async appendLedger(record: LedgerRecord): Promise<string> {
    const body = ledgerBody(record);
    const { rows } = await this.link.query<{ id: string }>('SELECT cpgw.append_ledger($1, $2) AS id', [
      Math.floor(record.at),
      body,
    ]);
    return rows[0]!.id;
  }

  async readLedger(fromMs: number, toMs: number, limit = DEFAULT_LEDGER_READ_LIMIT): Promise<LedgerRecord[]> {
    const from = Math.max(0, Math.ceil(fromMs));
    const to = Math.ceil(toMs);
    if (to <= from || limit <= 0) return [];
    const { rows } = await this.link.query<{ id: string; record: LedgerRecord }>(
      'SELECT id, record FROM cpgw.ledger WHERE ms >= $1 AND ms < $2 ORDER BY ms, seq LIMIT $3',
      [from, to, Math.floor(limit)],
    );
    return rows.map((r) => ({ ...r.record, id: r.id }));
  }

  async readLedgerAfter(
    afterId: string,
    toMs: number,
    limit = DEFAULT_LEDGER_READ_LIMIT,
  ): Promise<LedgerRecord[]> {
    const { ms, seq } = parseLedgerId(afterId);
    const to = Math.ceil(toMs);
    if (to <= ms || limit <= 0) return [];
    const { rows } = await this.link.query<{ id: string; record: LedgerRecord }>(
      'SELECT id, record FROM cpgw.ledger WHERE (ms, seq) > ($1, $2) AND ms < $3 ORDER BY ms, seq LIMIT $4',
      [ms, seq, to, Math.floor(limit)],
    );
    return rows.map((r) => ({ ...r.record, id: r.id }));
  }
}
