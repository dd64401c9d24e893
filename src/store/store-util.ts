// Small rules both Store backends share, so memory and Redis agree on argument handling and on
// the ledger's id format. Pure functions only: no I/O, no clock.
import type { BudgetCounterSpec, LedgerRecord, LimitClassSpec, ReserveResult } from './store.ts';

/** TTLs are whole milliseconds > 0 (Redis PX rejects 0 and fractions). */
export function ttlOf(ttlMs: number, what = 'ttlMs'): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`${what} must be > 0, got ${ttlMs}`);
  return Math.ceil(ttlMs);
}

/** A pause of zero or negative length (a reset time already past) changes nothing. */
export function isNoPause(durationMs: number): boolean {
  return Number.isFinite(durationMs) && durationMs <= 0;
}

/** Integer minor units; amounts are kopecks and must stay exact. */
export function minorOf(amount: number, what = 'amountMinor'): number {
  if (!Number.isSafeInteger(amount)) throw new RangeError(`${what} must be a safe integer, got ${amount}`);
  return amount;
}

/** The same counter named twice in one request is held once. */
/**
 * A backend's reserve/openCharge answer as a ReserveResult: {1, ...} = held; {0, index (1-based),
 * spent, held} = refused by that counter (Redis's Lua reply and PostgreSQL's bigint[] alike).
 */
export function reserveResult(
  reply: readonly (string | number)[],
  specs: BudgetCounterSpec[],
): ReserveResult {
  if (Number(reply[0]) === 1) return { ok: true };
  const spec = specs[Number(reply[1]) - 1]!;
  return {
    ok: false,
    key: spec.key,
    limitMinor: spec.limitMinor ?? 0,
    spentMinor: Number(reply[2]),
    reservedMinor: Number(reply[3]),
  };
}

export function uniqueCounters(counters: BudgetCounterSpec[]): BudgetCounterSpec[] {
  const byKey = new Map<string, BudgetCounterSpec>();
  for (const c of counters) if (!byKey.has(c.key)) byKey.set(c.key, c);
  return [...byKey.values()];
}

/** Classes deduplicated by name and checked: integer limit >= 0, window > 0. */
export function limitClasses(classes: LimitClassSpec[]): LimitClassSpec[] {
  const byName = new Map<string, LimitClassSpec>();
  for (const c of classes) {
    if (!Number.isSafeInteger(c.limit) || c.limit < 0) throw new RangeError(`limit of ${c.name}: ${c.limit}`);
    ttlOf(c.windowMs, `windowMs of ${c.name}`);
    if (!byName.has(c.name)) byName.set(c.name, c);
  }
  return [...byName.values()];
}

export function uniqueStrings(values: string[]): string[] {
  return [...new Set(values)];
}

/**
 * Ledger ids look like Redis stream ids, `<ms>-<seq>`: ms is the record's `at`, or the previous
 * record's ms when `at` is older than it (a late record keeps the log append-ordered).
 */
export function ledgerId(ms: number, seq: number): string {
  return `${ms}-${seq}`;
}

/** The parts of a ledger id `<ms>-<seq>`; throws RangeError on anything else. */
export function parseLedgerId(id: string): { ms: number; seq: number } {
  const m = /^(\d{1,16})-(\d{1,16})$/.exec(id);
  const ms = m ? Number(m[1]) : Number.NaN;
  const seq = m ? Number(m[2]) : Number.NaN;
  if (!Number.isSafeInteger(ms) || !Number.isSafeInteger(seq)) throw new RangeError(`ledger: bad id ${id}`);
  return { ms, seq };
}

/** A record as it comes back from either backend: JSON-clean (undefined fields dropped). */
export function cleanRecord(record: LedgerRecord): LedgerRecord {
  return JSON.parse(JSON.stringify(record)) as LedgerRecord;
}

export const DEFAULT_KEYS_LIMIT = 1000;
export const DEFAULT_LEDGER_READ_LIMIT = 1000;
