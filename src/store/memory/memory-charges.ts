// The memory store's money role: every operation is one synchronous step over the budget book,
// the ledger and this role's own maps (claims, pending entries, windows), so nothing can interleave
// between its checks and its writes.
//
// Must never: await between reading and writing, let an openCharge hold expire by time before
// the claim's lifetime, or shorten a window.
import type { Clock } from '../../clock.ts';
import { copyWith } from '../../object-copy.ts';
import type { BudgetCounterSpec, ReserveResult } from '../budget-store.ts';
import {
  type ChargeRecord,
  type ChargeStore,
  CLAIM_TTL_MS,
  type CompanyWindows,
  DEFAULT_PENDING_LIMIT,
  DEFAULT_WINDOWS_LIMIT,
  type PendingCharge,
  type RecordResult,
  type WindowKind,
  type WindowOpening,
} from '../charge-store.ts';
import {
  holdSpecs,
  leaseArgs,
  mergeWindow,
  NO_WINDOWS,
  pendingOf,
  recordOf,
  windowEnd,
  windowOpeningOf,
} from '../charge-util.ts';
import { uniqueStrings } from '../store-util.ts';
import type { MemoryBudgets } from './memory-budgets.ts';
import type { MemoryLedger } from './memory-ledger.ts';
import type { WriteCounter } from './write-counter.ts';

interface WindowEntry extends CompanyWindows {
  /** Store-clock time after which the entry is dropped. */
  expiresAt: number;
}

export class MemoryCharges implements ChargeStore {
  private readonly pending = new Map<string, PendingCharge>();
  /** Claim key -> store-clock expiry. */
  private readonly claims = new Map<string, number>();
  private readonly byInn = new Map<string, WindowEntry>();

  constructor(
    private readonly clock: Clock,
    private readonly book: MemoryBudgets,
    private readonly ledger: MemoryLedger,
    private readonly writes: WriteCounter,
  ) {}

  async openCharge(p: PendingCharge, counters: BudgetCounterSpec[]): Promise<ReserveResult> {
    const entry = pendingOf(p, counters);
    const result = this.book.reserve({
      id: entry.key,
      amountMinor: entry.estimateMinor,
      counters: holdSpecs(counters),
      holdMs: CLAIM_TTL_MS,
    });
    if (result.ok) {
      this.pending.set(entry.key, entry);
      this.writes.wrote();
    }
    return result;
  }

  async renewCharge(key: string, owner: string, leaseUntil: number, replayKey?: string): Promise<boolean> {
    const until = leaseArgs(key, leaseUntil);
    const entry = this.pending.get(key);
    if (!entry || entry.owner !== owner) return false;
    entry.leaseUntil = until;
    if (replayKey) entry.replayKey = replayKey;
    return true;
  }

  async takeOverCharge(
    key: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<PendingCharge | null> {
    const until = leaseArgs(key, leaseUntil);
    const entry = this.pending.get(key);
    if (!entry || entry.leaseUntil > now) return null;
    entry.owner = owner;
    entry.leaseUntil = until;
    entry.reconcileAttempts += 1;
    return copyWith(entry, { counters: [...entry.counters] });
  }

  async recordCharge(r: ChargeRecord): Promise<RecordResult> {
    const c = recordOf(r);
    this.ledger.check(r.entry);
    const pending = this.pending.get(c.key);
    const held = uniqueStrings([...r.counters, ...(pending?.counters ?? [])]);
    let recorded = false;
    if (this.isClaimed(c.key)) {
      this.book.release(c.key, held);
    } else {
      recorded = true;
      this.claims.set(c.key, this.clock.now() + CLAIM_TTL_MS);
      this.ledger.append(r.entry);
      this.book.settle(c.key, r.counters, c.amount, c.ttl);
      this.book.release(c.key, held);
      if (c.window) this.merge(c.window.inn, c.window.kind, c.window.until, c.at);
    }
    this.pending.delete(c.key);
    this.writes.wrote();
    return { recorded, windows: c.window ? this.read(c.window.inn) : null };
  }

  async releaseCharge(key: string): Promise<void> {
    const pending = this.pending.get(key);
    if (!pending) return;
    this.book.release(key, pending.counters);
    this.pending.delete(key);
  }

  async pendingCharges(limit = DEFAULT_PENDING_LIMIT): Promise<PendingCharge[]> {
    return [...this.pending.values()]
      .sort((a, b) => a.at - b.at || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, Math.max(0, limit))
      .map((e) => copyWith(e, { counters: [...e.counters] }));
  }

  async isRecorded(key: string): Promise<boolean> {
    return this.isClaimed(key);
  }

  async windows(inn: string): Promise<CompanyWindows> {
    return this.read(inn);
  }

  async openWindow(inn: string, kind: WindowKind, until: number, now: number): Promise<CompanyWindows> {
    this.merge(inn, windowOpeningOf(kind), until, now);
    this.writes.wrote();
    return this.read(inn);
  }

  async listWindows(
    now: number,
    limit = DEFAULT_WINDOWS_LIMIT,
  ): Promise<Array<CompanyWindows & { inn: string }>> {
    const out: Array<CompanyWindows & { inn: string }> = [];
    for (const inn of this.byInn.keys()) {
      if (out.length >= limit) break;
      const w = this.read(inn);
      if (windowEnd(w) > now) out.push({ inn, ...w });
    }
    return out;
  }

  sweep(): void {
    const now = this.clock.now();
    for (const [key, expiresAt] of this.claims) if (expiresAt <= now) this.claims.delete(key);
    for (const [inn, w] of this.byInn) if (w.expiresAt <= now) this.byInn.delete(inn);
  }

  private isClaimed(key: string): boolean {
    const expiresAt = this.claims.get(key);
    if (expiresAt === undefined) return false;
    if (expiresAt > this.clock.now()) return true;
    this.claims.delete(key);
    return false;
  }

  /** Max-merges; the entry lives until its last window ends (measured from the caller's `now`). */
  private merge(inn: string, kind: WindowOpening, until: number, now: number): void {
    const next = mergeWindow(this.read(inn), kind, until, now);
    const left = windowEnd(next) - now;
    if (left <= 0) return;
    this.byInn.set(inn, copyWith(next, { expiresAt: this.clock.now() + left }));
  }

  private read(inn: string): CompanyWindows {
    const w = this.byInn.get(inn);
    if (!w) return { ...NO_WINDOWS };
    if (w.expiresAt <= this.clock.now()) {
      this.byInn.delete(inn);
      return { ...NO_WINDOWS };
    }
    return { dossierUntil: w.dossierUntil, requisitesUntil: w.requisitesUntil };
  }
}
