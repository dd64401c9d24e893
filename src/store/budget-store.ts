// The budget role of the Store: spend counters with holds, every counter of one call checked and
// held in one atomic step. The money role (charge-store.ts) works on the same counters.
//
// Must never: hold on some counters and not others, or let a hold outlive holdMs.

export interface BudgetCounterSpec {
  /** Logical counter name, e.g. "app:crm:day:2026-01-15" or "global:month:2026-01". */
  key: string;
  /** Hard cap in kopecks; null = no cap (still counted). */
  limitMinor: number | null;
  /** How long the counter lives after its last change (outlives its period). */
  ttlMs: number;
}

export interface ReserveRequest {
  /** Unique reservation id (the gateway request id is fine). */
  id: string;
  amountMinor: number;
  counters: BudgetCounterSpec[];
  /** A hold not settled or released within this time is dropped (a replica died mid-call). */
  holdMs: number;
}

export type ReserveResult =
  | { ok: true }
  | { ok: false; key: string; limitMinor: number; spentMinor: number; reservedMinor: number };

export interface CounterState {
  key: string;
  spentMinor: number;
  reservedMinor: number;
}

export interface BudgetStore {
  /**
   * Holds `amountMinor` on every counter, or on none. Refuses when spent + held + amount would pass a
   * counter's limit (reports the first such counter). Reserving again under an id that already
   * holds replaces that hold. Hold expiry: memory uses the injected clock, Redis its server time.
   */
  reserve(request: ReserveRequest): Promise<ReserveResult>;
  /**
   * Turns the hold into spend of `actualMinor` (may differ from the hold) on every counter. Spends
   * even when the hold already expired: the charge happened.
   */
  settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void>;
  /** Drops the hold without spending. */
  release(id: string, counterKeys: string[]): Promise<void>;
  /** Adds spend without a prior hold (e.g. a charge learned from a webhook). */
  addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void>;
  readCounters(keys: string[]): Promise<CounterState[]>;
}
