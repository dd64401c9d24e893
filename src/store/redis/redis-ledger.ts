// The Redis store's ledger role: one stream under the `{money}` hash tag whose ids follow the
// records' `at` (money-scripts.ts appends; the money role appends to the same stream).
//
// Must never: reorder records (a late record takes the last id's time).
import { copyWith } from '../../object-copy.ts';
import type { LedgerRecord, LedgerStore } from '../ledger-store.ts';
import { DEFAULT_LEDGER_READ_LIMIT, parseLedgerId } from '../store-util.ts';
import type { RedisLink } from './link.ts';
import { LEDGER_APPEND } from './money-scripts.ts';

/** The stream body of a record (its id is the stream's). */
export function ledgerBody(record: LedgerRecord): string {
  if (!Number.isFinite(record.at) || record.at < 0) throw new RangeError(`ledger: bad at ${record.at}`);
  return JSON.stringify(copyWith(record, { id: undefined }));
}

export class RedisLedger implements LedgerStore {
  constructor(
    private readonly link: RedisLink,
    readonly maxLen: number,
  ) {}

  async appendLedger(record: LedgerRecord): Promise<string> {
    const args = [Math.floor(record.at), ledgerBody(record), this.maxLen];
    return String(await this.link.script(LEDGER_APPEND, [this.link.k.ledger], args));
  }

  async readLedger(fromMs: number, toMs: number, limit = DEFAULT_LEDGER_READ_LIMIT): Promise<LedgerRecord[]> {
    const from = Math.max(0, Math.ceil(fromMs));
    const last = Math.ceil(toMs) - 1;
    if (last < from || limit <= 0) return [];
    return this.range(String(from), String(last), limit);
  }

  async readLedgerAfter(
    afterId: string,
    toMs: number,
    limit = DEFAULT_LEDGER_READ_LIMIT,
  ): Promise<LedgerRecord[]> {
    const { ms, seq } = parseLedgerId(afterId);
    const last = Math.ceil(toMs) - 1;
    if (last < ms || limit <= 0) return [];
    // The next possible id after <ms>-<seq> (inclusive start; works on every Redis version).
    return this.range(`${ms}-${seq + 1}`, String(last), limit);
  }

  private async range(start: string, end: string, limit: number): Promise<LedgerRecord[]> {
    const { link } = this;
    const entries = await link.run(() => link.client.xrange(link.k.ledger, start, end, 'COUNT', limit));
    return entries.map(([id, fields]) => {
      const body = fields[fields.indexOf('r') + 1] ?? '{}';
      return { ...(JSON.parse(body) as LedgerRecord), id };
    });
  }
}
