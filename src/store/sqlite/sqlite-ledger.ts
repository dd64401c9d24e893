// The embedded money database's ledger role: the append-only spend log in the ledger table, keyed
// by the same `<ms>-<seq>` ids as the memory and Redis ledgers (store-util.ts ledgerId). The money
// role appends inside its record step. Unlike the memory ledger it has no cap: it is the record
// finance reads, and it lives on disk.
//
// Must never: reorder or rewrite a record once appended.
import { copyWith } from '../../object-copy.ts';
import type { LedgerRecord, LedgerStore } from '../ledger-store.ts';
import { cleanRecord, DEFAULT_LEDGER_READ_LIMIT, ledgerId, parseLedgerId } from '../store-util.ts';
import type { MoneyDb } from './sqlite-db.ts';

export class SqliteLedger implements LedgerStore {
  constructor(private readonly db: MoneyDb) {}

  /** Throws on a bad `at` before anything is written. */
  check(record: LedgerRecord): void {
    if (!Number.isFinite(record.at) || record.at < 0) throw new RangeError(`ledger: bad at ${record.at}`);
  }

  /** Inside a transaction (checked first). */
  append(record: LedgerRecord): string {
    this.check(record);
    const last = this.db.get('SELECT ms, seq FROM ledger ORDER BY ms DESC, seq DESC LIMIT 1');
    const lastMs = last ? Number(last.ms) : -1;
    const at = Math.floor(record.at);
    const ms = lastMs > at ? lastMs : at;
    const seq = last && lastMs === ms ? Number(last.seq) + 1 : 0;
    const id = ledgerId(ms, seq);
    this.db.run('INSERT INTO ledger (ms, seq, record) VALUES (?, ?, ?)', [
      ms,
      seq,
      JSON.stringify(cleanRecord(copyWith(record, { id }) as LedgerRecord)),
    ]);
    return id;
  }

  async appendLedger(record: LedgerRecord): Promise<string> {
    this.check(record);
    return this.db.tx(() => this.append(record));
  }

  async readLedger(fromMs: number, toMs: number, limit = DEFAULT_LEDGER_READ_LIMIT): Promise<LedgerRecord[]> {
    if (!(toMs > fromMs) || limit <= 0) return [];
    const rows = this.db.all('SELECT record FROM ledger WHERE ms >= ? AND ms < ? ORDER BY ms, seq LIMIT ?', [
      Math.max(0, Math.ceil(fromMs)),
      Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(toMs)),
      Math.floor(Math.min(limit, Number.MAX_SAFE_INTEGER)),
    ]);
    return rows.map((r) => JSON.parse(String(r.record)) as LedgerRecord);
  }

  async readLedgerAfter(
    afterId: string,
    toMs: number,
    limit = DEFAULT_LEDGER_READ_LIMIT,
  ): Promise<LedgerRecord[]> {
    const { ms, seq } = parseLedgerId(afterId);
    const to = Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(toMs));
    if (!(to > ms) || limit <= 0) return [];
    // `ms >= ?` first: the primary key's range scan starts at the resume point (an OR of the two
    // cases alone made SQLite scan from the start of the table on every page).
    const rows = this.db.all(
      'SELECT record FROM ledger WHERE ms >= ? AND ms < ? AND (ms > ? OR seq > ?) ORDER BY ms, seq LIMIT ?',
      [ms, to, ms, seq, Math.floor(Math.min(limit, Number.MAX_SAFE_INTEGER))],
    );
    return rows.map((r) => JSON.parse(String(r.record)) as LedgerRecord);
  }
}
