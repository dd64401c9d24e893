// The money role of the Store (issue #10): recording a charge is ONE atomic step (claim + ledger
// entry + budget settle + window open), and a charged call writes a pending entry, holding its
// estimate on every budget, BEFORE it goes upstream, so an unknown outcome stays counted until a
// reconciler resolves it. Windows live here because opening one must be atomic with the charge.
//
// Redis keeps every key of this role (and of the budget and ledger roles) under the `{money}`
// hash tag; memory does each operation in one synchronous step. Leases compare the `now` the
// caller passes (the gateway clock), never the store's own time.
//
// Must never: write half of an operation, record one charge twice, shorten a window, or let a
// hold made by openCharge expire by time (only recordCharge/releaseCharge end it).
import type { BudgetCounterSpec, ReserveResult } from './budget-store.ts';
import type { LedgerRecord } from './ledger-store.ts';

export type WindowKind = 'dossier' | 'requisites';
/**
 * What opens or extends a window: a dossier or requisites charge, or a requisites check whose data
 * became ready. The spec's window table moves a company from any state to "requisites window
 * open" on such a check, so it also ends an open dossier window (at the step's `now`): reads of
 * the dossier are estimated as charged again, which is safe under either reading of the table.
 */
export type WindowOpening = WindowKind | 'requisites_check';

export interface CompanyWindows {
  /** ms epoch; 0 when no dossier window was seen. */
  dossierUntil: number;
  /** ms epoch; 0 when no requisites window was seen. */
  requisitesUntil: number;
}

export interface PendingCharge {
  /** The Idempotency-Key the upstream call carries; identity of the logical paid request. */
  key: string;
  requestId: string;
  app: string;
  /** Route name, e.g. 'company'. */
  operation: string;
  /** Price kind: 'dossier' | 'requisites' | 'check' | 'person'. */
  kind: string;
  inn: string;
  estimateMinor: number;
  /** ms, when the call was started. */
  at: number;
  /** What a reconciler replays ... */
  method: 'GET' | 'POST';
  /** ... path + query as sent upstream ... */
  target: string;
  /** ... raw JSON body (POST) or null. */
  body: string | null;
  /** Window a charge opens. */
  opens: WindowKind | null;
  /** Budget counter keys held for this charge. */
  counters: string[];
  counterTtlMs: number;
  /** Replica id holding the lease. */
  owner: string;
  /**
   * The key the latest attempt carried upstream, when it is not `key`: after an answer that
   * proves no charge (503 billing_unavailable) a retry switches to a fresh key, and a replay of
   * that one is what tells the truth. Absent: `key`.
   */
  replayKey?: string;
  /** ms; 0 = outcome unknown, free for a reconciler at once. */
  leaseUntil: number;
  reconcileAttempts: number;
}

export interface ChargeRecord {
  /** The pending entry / claim identity (idempotency key). */
  key: string;
  /** > 0: what the upstream charged. */
  amountMinor: number;
  /**
   * The final ledger entry (at, app, operation, kind, inn, amountMinor, upstreamRequestId,
   * requestId, idempotencyKey, reconciled?: boolean).
   */
  entry: LedgerRecord;
  /** Budget counters to settle on (hold -> spend; no hold: add spend). */
  counters: string[];
  counterTtlMs: number;
  /** Max-merged, never shortened. */
  window?: { inn: string; kind: WindowOpening; until: number };
}

export interface RecordResult {
  /** false: the claim already existed (already counted); only the pending entry and holds went. */
  recorded: boolean;
  /** The company's windows after the step, when `window` was given; else null. */
  windows: CompanyWindows | null;
}

export interface ChargeStore {
  /** Reserve `estimateMinor` on every counter (all or none, same caps rule as reserve()) AND store
   *  the pending entry, in one step. On refusal nothing is written. */
  openCharge(p: PendingCharge, counters: BudgetCounterSpec[]): Promise<ReserveResult>;
  /** Extends the lease while the owner still owns the entry; false when the entry is gone or
   *  owned by someone else (a reconciler took it). leaseUntil 0 marks the outcome unknown. */
  renewCharge(key: string, owner: string, leaseUntil: number, replayKey?: string): Promise<boolean>;
  /** Takes over an entry whose lease ended (leaseUntil <= now): sets owner/leaseUntil, bumps
   *  reconcileAttempts; returns the entry, or null when it is gone or its lease is still live. */
  takeOverCharge(key: string, owner: string, now: number, leaseUntil: number): Promise<PendingCharge | null>;
  /** One atomic step: if the claim for `key` exists, only drop the pending entry and its holds and
   *  answer recorded:false (already counted). Else set the claim (1 day), append the ledger entry,
   *  settle the holds to amountMinor (spend += amount, held -= hold; add spend where no hold),
   *  max-merge the window, drop the pending entry; answer recorded:true. Always returns the
   *  company's windows after the step (when `window` given). Idempotent under replay. */
  recordCharge(r: ChargeRecord): Promise<RecordResult>;
  /** Proven no charge: drop the holds and the pending entry (no-op when gone). */
  releaseCharge(key: string): Promise<void>;
  /** Pending entries, oldest first, at most `limit` (reconciler and /admin/ledger). */
  pendingCharges(limit?: number): Promise<PendingCharge[]>;
  /** Whether a charge under this key is already recorded (claim exists). */
  isRecorded(key: string): Promise<boolean>;

  /** Windows (read by the charge gate, cache stage, estimates). */
  windows(inn: string): Promise<CompanyWindows>;
  /** Opens/extends a window without a charge (check data ready): max-merge, atomic. */
  openWindow(inn: string, kind: WindowOpening, until: number, now: number): Promise<CompanyWindows>;
  /** Companies with a window ending after `now`, at most `limit`. */
  listWindows(now: number, limit?: number): Promise<Array<CompanyWindows & { inn: string }>>;
}

/** The claim (and an openCharge hold) lives as long as the upstream keeps idempotency keys. */
export const CLAIM_TTL_MS = 86_400_000;
export const DEFAULT_PENDING_LIMIT = 1000;
export const DEFAULT_WINDOWS_LIMIT = 1000;
