// The memory store's ledger role: an append-ordered array with a cap. The money role appends to it
// synchronously inside its record step.
//
// Must never: reorder records, or grow past its cap (the oldest are dropped and counted).
import { copyWith } from '../../object-copy.ts';
import type { LedgerRecord, LedgerStore } from '../ledger-store.ts';
import { cleanRecord, DEFAULT_LEDGER_READ_LIMIT, ledgerId, parseLedgerId } from '../store-util.ts';

interface LedgerEntry {
  ms: number;
  seq: number;
  record: LedgerRecord;
}

export class MemoryLedger implements LedgerStore {
  private readonly entries: LedgerEntry[] = [];
  private head = 0;
  private droppedCount = 0;

  constructor(private readonly maxRecords: number) {}

  /** Records dropped because the ledger exceeded its cap. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Throws on a bad `at` before anything is written. */
  check(record: LedgerRecord): void {
    if (!Number.isFinite(record.at) || record.at < 0) throw new RangeError(`ledger: bad at ${record.at}`);
  }

  /** The synchronous append (checked first). */
  append(record: LedgerRecord): string {
    this.check(record);
    const last = this.entries[this.entries.length - 1];
    const at = Math.floor(record.at);
    const ms = last && last.ms > at ? last.ms : at;
    const seq = last && last.ms === ms ? last.seq + 1 : 0;
    const id = ledgerId(ms, seq);
    this.entries.push({ ms, seq, record: cleanRecord(copyWith(record, { id }) as LedgerRecord) });
    if (this.entries.length - this.head > this.maxRecords) {
      this.head++;
      this.droppedCount++;
      if (this.head >= 1024 && this.head * 2 >= this.entries.length) {
        this.entries.splice(0, this.head);
        this.head = 0;
      }
    }
    return id;
  }

  async appendLedger(record: LedgerRecord): Promise<string> {
    return this.append(record);
  }

  async readLedger(fromMs: number, toMs: number, limit = DEFAULT_LEDGER_READ_LIMIT): Promise<LedgerRecord[]> {
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.ms < fromMs) lo = mid + 1;
      else hi = mid;
    }
    const out: LedgerRecord[] = [];
    for (let i = lo; i < this.entries.length && out.length < limit; i++) {
      const entry = this.entries[i]!;
      if (entry.ms >= toMs) break;
      out.push({ ...entry.record });
    }
    return out;
  }

  async readLedgerAfter(
    afterId: string,
    toMs: number,
    limit = DEFAULT_LEDGER_READ_LIMIT,
  ): Promise<LedgerRecord[]> {
    const after = parseLedgerId(afterId);
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const e = this.entries[mid]!;
      if (e.ms < after.ms || (e.ms === after.ms && e.seq <= after.seq)) lo = mid + 1;
      else hi = mid;
    }
    const out: LedgerRecord[] = [];
    for (let i = lo; i < this.entries.length && out.length < limit; i++) {
      const entry = this.entries[i]!;
      if (entry.ms >= toMs) break;
      out.push({ ...entry.record });
    }
    return out;
  }
}
