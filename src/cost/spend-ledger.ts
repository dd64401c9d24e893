// The spend ledger, read side: one entry per charge (time, app, operation, INN, amount, upstream
// and gateway request ids, idempotency key, whether the reconciler recorded it), durable in the
// Store (a Redis stream with Redis), exported as JSON pages or a CSV stream. Entries are written
// only by the money role's recordCharge (charge-book.ts), claimed by idempotency key in the same
// atomic step, so an upstream replay of a charge already recorded is never recorded twice.
//
// Reading resumes by record id (LedgerStore.readLedgerAfter), so a range of any size is read in
// pages of bounded size: every record exactly once, records sharing a millisecond included.
//
// Must never: cap or silently shorten a range (a page says whether more remain), or hold a whole
// range in memory to stream it.

import { nextTurn } from '../json-in-turns.ts';
import type { LedgerRecord, LedgerStore } from '../store/ledger-store.ts';

export interface SpendEntry {
  /** The ledger record's id, `<ms>-<seq>` (the order of the log). */
  id: string;
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

/** One page of a range: its entries, the id to resume after, and whether the range is exhausted. */
export interface SpendPage {
  entries: SpendEntry[];
  /** The id of the last record this page covered (resume after it); null when nothing was read. */
  lastId: string | null;
  /** True when no record of the range (matching the app) follows this page. */
  complete: boolean;
}

/**
 * Records read from the store per round trip while scanning (an app filter may skip many). Each
 * batch is one turn of the event loop on a store that answers without I/O (memory, the embedded
 * SQLite: ~7 ms a 1,000 there), so it is kept small enough for other requests not to notice.
 */
const SCAN_BATCH = 250;

function toEntry(r: LedgerRecord): SpendEntry {
  return {
    id: String(r.id),
    at: Number(r.at),
    app: String(r.app),
    operation: String(r.operation),
    kind: String(r.kind),
    inn: r.inn === null || r.inn === undefined || r.inn === '' ? null : String(r.inn),
    amountMinor: Number(r.amountMinor),
    upstreamRequestId: r.upstreamRequestId ? String(r.upstreamRequestId) : null,
    requestId: String(r.requestId),
    idempotencyKey: r.idempotencyKey ? String(r.idempotencyKey) : null,
    ...(r.reconciled === true || r.reconciled === 'true' || r.reconciled === '1' ? { reconciled: true } : {}),
  };
}

/** Which entries a read keeps: of one app, one kind, one company (each optional). */
export interface LedgerFilter {
  app?: string | undefined;
  kind?: string | undefined;
  inn?: string | undefined;
}

function matcher(f: LedgerFilter): ((e: SpendEntry) => boolean) | null {
  if (!f.app && !f.kind && !f.inn) return null;
  return (e) => (!f.app || e.app === f.app) && (!f.kind || e.kind === f.kind) && (!f.inn || e.inn === f.inn);
}

export class SpendLedger {
  constructor(private readonly store: LedgerStore) {}

  /**
   * Batches of entries of [fromMs, toMs) (of `app` when given), oldest first, read `batch` records
   * at a time after `afterId` (or from fromMs): memory stays bounded by one batch however long
   * the range. Yields each batch with the id of its last record (the resume point).
   */
  async *batches(
    fromMs: number,
    toMs: number,
    o: LedgerFilter & { afterId?: string | null; batch?: number } = {},
  ): AsyncGenerator<{ entries: SpendEntry[]; lastId: string }> {
    const keep = matcher(o);
    const size = o.batch ?? SCAN_BATCH;
    let after = o.afterId ?? null;
    for (;;) {
      const records =
        after === null
          ? await this.store.readLedger(fromMs, toMs, size)
          : await this.store.readLedgerAfter(after, toMs, size);
      if (records.length === 0) return;
      after = String(records[records.length - 1]!.id);
      const entries = records.map(toEntry);
      yield { entries: keep ? entries.filter(keep) : entries, lastId: after };
      if (records.length < size) return;
      // A store that answers without I/O would otherwise run the whole scan in one turn while
      // every other request waits (bench/ledger-export.ts: 1.3 s for a CSV of 200,000 entries).
      await nextTurn();
    }
  }

  /**
   * At most `limit` entries of the range after `afterId` (or from fromMs), and whether more remain.
   * The resume point is the last entry returned, so a later page starts right after it.
   */
  async page(
    fromMs: number,
    toMs: number,
    o: LedgerFilter & { afterId?: string | null; limit: number },
  ): Promise<SpendPage> {
    const entries: SpendEntry[] = [];
    let lastId: string | null = null;
    // Without a filter, a small page is one read of limit + 1 records (which tells whether more
    // remain); a large one is read a batch, and a turn of the event loop, at a time.
    const batch = matcher(o) ? SCAN_BATCH : Math.min(o.limit + 1, SCAN_BATCH);
    const filter = { app: o.app, kind: o.kind, inn: o.inn };
    for await (const b of this.batches(fromMs, toMs, { ...filter, afterId: o.afterId ?? null, batch })) {
      for (const e of b.entries) {
        if (entries.length === o.limit) return { entries, lastId, complete: false };
        entries.push(e);
        lastId = e.id;
      }
    }
    return { entries, lastId, complete: true };
  }

  /** Every entry of [fromMs, toMs) (of `app`), read in pages; no cap (the caller bounds the range). */
  async read(fromMs: number, toMs: number, app?: string): Promise<SpendEntry[]> {
    const out: SpendEntry[] = [];
    for await (const b of this.batches(fromMs, toMs, { app })) for (const e of b.entries) out.push(e);
    return out;
  }
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

/** Throws a RangeError for a zone Intl does not know. */
function offsetFormatter(timeZone: string): Intl.DateTimeFormat {
  let f = offsetFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    offsetFormatters.set(timeZone, f);
  }
  return f;
}

/** True when `timeZone` is an IANA zone (or UTC) Intl knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    offsetFormatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * Formats instants as ISO 8601 with the zone's offset at that instant ("2026-11-28T12:00:00.000+03:00").
 * The offset is looked up once per minute of time (offsets change on whole minutes; one lookup
 * costs ~30 us, a million rows would otherwise spend half a minute on it).
 */
export class ZonedTime {
  private minute = Number.NaN;
  private offsetMin = 0;

  constructor(readonly timeZone: string) {
    offsetFormatter(timeZone);
  }

  /** The zone's offset from UTC at `ms`, in whole minutes. */
  offsetMinutes(ms: number): number {
    const minute = Math.floor(ms / 60_000);
    if (minute !== this.minute) {
      const at = minute * 60_000;
      const parts = offsetFormatter(this.timeZone).formatToParts(new Date(at));
      const n = (type: string) => Number(parts.find((p) => p.type === type)!.value);
      const wall = Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second'));
      this.offsetMin = Math.round((wall - at) / 60_000);
      this.minute = minute;
    }
    return this.offsetMin;
  }

  format(ms: number): string {
    const off = this.offsetMinutes(ms);
    const local = new Date(ms + off * 60_000).toISOString().slice(0, -1);
    const abs = Math.abs(off);
    const hh = String(Math.floor(abs / 60)).padStart(2, '0');
    const mm = String(abs % 60).padStart(2, '0');
    return `${local}${off < 0 ? '-' : '+'}${hh}:${mm}`;
  }
}

export const CSV_COLUMNS = [
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
  'at_ms',
] as const;

export const CSV_HEADER = `${CSV_COLUMNS.join(',')}\n`;

function csvCell(value: string | number | null): string {
  const s = value === null ? '' : String(value);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** One CSV line (with its newline) of an entry, its time shown in `zone`. */
export function csvLine(e: SpendEntry, zone: ZonedTime): string {
  return `${[
    zone.format(e.at),
    e.app,
    e.operation,
    e.kind,
    e.inn,
    e.amountMinor,
    e.upstreamRequestId,
    e.requestId,
    e.idempotencyKey,
    e.reconciled ? 'true' : 'false',
    e.at,
  ]
    .map(csvCell)
    .join(',')}\n`;
}

/** The CSV of some entries, header first (small exports and tests; the route streams). */
export function ledgerCsv(entries: readonly SpendEntry[], zone = new ZonedTime('UTC')): string {
  return CSV_HEADER + entries.map((e) => csvLine(e, zone)).join('');
}
