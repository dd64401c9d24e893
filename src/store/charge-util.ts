// Rules both backends of the money role share: argument checks (run before anything is written)
// and the window max-merge. Pure functions only: no I/O, no clock.
import { copyWith } from '../object-copy.ts';
import type { BudgetCounterSpec } from './budget-store.ts';
import {
  type ChargeRecord,
  CLAIM_TTL_MS,
  type CompanyWindows,
  type PendingCharge,
  type WindowKind,
  type WindowOpening,
} from './charge-store.ts';
import { minorOf, ttlOf, uniqueCounters, uniqueStrings } from './store-util.ts';

export const NO_WINDOWS: CompanyWindows = Object.freeze({ dossierUntil: 0, requisitesUntil: 0 });

function timeOf(ms: number, what: string): number {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`${what} must be a time in ms, got ${ms}`);
  return Math.floor(ms);
}

function keyOf(key: string): string {
  if (typeof key !== 'string' || key.length === 0)
    throw new RangeError('charge key must be a non-empty string');
  return key;
}

export function windowKindOf(kind: string): WindowKind {
  if (kind !== 'dossier' && kind !== 'requisites') throw new RangeError(`bad window kind ${kind}`);
  return kind;
}

export function windowOpeningOf(kind: string): WindowOpening {
  return kind === 'requisites_check' ? kind : windowKindOf(kind);
}

/**
 * The pending entry as stored: checked, and its `counters` naming every counter held (the given
 * keys plus the specs' keys), so releasing it frees every hold.
 */
export function pendingOf(p: PendingCharge, specs: BudgetCounterSpec[]): PendingCharge {
  keyOf(p.key);
  minorOf(p.estimateMinor, 'estimateMinor');
  if (p.estimateMinor < 0) throw new RangeError('estimateMinor must be >= 0');
  ttlOf(p.counterTtlMs, 'counterTtlMs');
  if (p.opens !== null) windowKindOf(p.opens);
  return copyWith(p, {
    at: timeOf(p.at, 'at'),
    leaseUntil: timeOf(p.leaseUntil, 'leaseUntil'),
    counters: uniqueStrings([...p.counters, ...specs.map((s) => s.key)]),
  });
}

/**
 * The counters an openCharge holds on: each lives at least as long as the hold (the claim's
 * lifetime), so a counter's own TTL can never drop a charge's hold before record or release.
 */
export function holdSpecs(specs: BudgetCounterSpec[]): BudgetCounterSpec[] {
  return uniqueCounters(specs).map((s) => copyWith(s, { ttlMs: Math.max(ttlOf(s.ttlMs), CLAIM_TTL_MS) }));
}

export interface CheckedRecord {
  key: string;
  amount: number;
  ttl: number;
  at: number;
  window: { inn: string; kind: WindowOpening; until: number } | null;
}

export function recordOf(r: ChargeRecord): CheckedRecord {
  const amount = minorOf(r.amountMinor);
  if (amount <= 0) throw new RangeError(`amountMinor of a recorded charge must be > 0, got ${amount}`);
  const at = timeOf(r.entry.at, 'entry.at');
  const window = r.window
    ? {
        inn: r.window.inn,
        kind: windowOpeningOf(r.window.kind),
        until: timeOf(r.window.until, 'window.until'),
      }
    : null;
  return { key: keyOf(r.key), amount, ttl: ttlOf(r.counterTtlMs, 'counterTtlMs'), at, window };
}

export function leaseArgs(key: string, leaseUntil: number): number {
  keyOf(key);
  return timeOf(leaseUntil, 'leaseUntil');
}

/** `current` with `kind` extended to `until`; never shortened. */
export function mergeWindow(
  current: CompanyWindows,
  kind: WindowOpening,
  until: number,
  now: number,
): CompanyWindows {
  if (kind === 'dossier') return copyWith(current, { dossierUntil: Math.max(current.dossierUntil, until) });
  const requisitesUntil = Math.max(current.requisitesUntil, until);
  // A requisites check's data ends an open dossier window (charge-store.ts, WindowOpening).
  const dossierUntil =
    kind === 'requisites_check' ? Math.min(current.dossierUntil, now) : current.dossierUntil;
  return { dossierUntil, requisitesUntil };
}

export function windowEnd(w: CompanyWindows): number {
  return Math.max(w.dossierUntil, w.requisitesUntil);
}
