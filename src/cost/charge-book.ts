// The life of one charged upstream call in the money store (issue #10, DESIGN.md "State"):
//   open     BEFORE the call: the estimate is held on every budget and a pending ledger entry
//            (idempotency key, app, INN, kind, estimate, what to replay) is written, in ONE
//            atomic step; a cap that would be passed refuses here. A lease on the entry is
//            renewed while the call runs.
//   record   the upstream charged: claim + ledger entry + budget settle + window open, ONE
//            atomic step (an already-claimed key counts nothing twice).
//   release  the upstream proved it charged nothing: the holds and the entry go.
//   unknown  no answer (timeout, lost connection, a fault): the entry stays, counted against
//            every budget, its lease ended, for the reconciler to resolve by replaying the key.
// record and release go through the local outbox, so a store that fails right after the answer
// loses nothing. A record may run after the answer is written (stages/record.ts): the pending
// entry, durable before the call, is then what finds the charge should the process die first,
// and track() makes a graceful shutdown wait for it. A replica that dies mid-call leaves its entry with a lease that ends within
// `leaseMs`; the reconciler on any live replica then resolves it.
//
// Must never: let a charged call start without its pending entry, or end a hold on a guess.
import type { Clock } from '../clock.ts';
import { copyWith } from '../object-copy.ts';
import type {
  ChargeRecord,
  ChargeStore,
  CompanyWindows,
  PendingCharge,
  WindowOpening,
} from '../store/store.ts';
import type { BudgetDenial, BudgetGuard } from './budget-guard.ts';
import type { ChargeOutbox } from './charge-outbox.ts';
import { keepAlive, type Lease } from './lease.ts';

export interface ChargeBookOptions {
  store: Pick<ChargeStore, 'openCharge' | 'renewCharge'>;
  budgets: BudgetGuard;
  outbox: ChargeOutbox;
  clock: Clock;
  /** This replica's id: the owner of the leases it takes. */
  replicaId: string;
  /** A pending entry's lease; renewed every third of it while the call runs. */
  leaseMs: number;
  /** The coverage window's length (a charge opens one from the call's start). */
  windowMs: number;
  onError?: (err: unknown, what: string) => void;
}

/** What the caller knows of a charged call; the book adds the time, counters and lease. */
export type ChargeRequest = Omit<
  PendingCharge,
  'at' | 'counters' | 'counterTtlMs' | 'owner' | 'leaseUntil' | 'reconcileAttempts' | 'replayKey'
>;

/** A charge opened by this replica, while its call runs. */
export interface OpenCharge {
  readonly pending: PendingCharge;
  /** Renews the lease; stopped when the charge ends. */
  readonly lease: Lease;
  ended: boolean;
}

export interface Recorded {
  /** What this call added to spend: 0 when the key was already counted. */
  chargedMinor: number;
  /** The company's windows after the record; null when the store was unreachable (outbox). */
  windows: CompanyWindows | null;
  /** false: the store was unreachable and the record waits in the local outbox. */
  stored: boolean;
}

export interface AnswerFacts {
  amountMinor: number;
  upstreamRequestId: string | null;
  /** When the upstream may have charged first (the call's start): the window opens from here. */
  startedAt: number;
  /** The answer opens the window (a 200 of a read or of a check answered at once). */
  opensWindow: boolean;
  reconciled?: boolean;
}

/** A check for requisites whose data came back opens a requisites window and ends a dossier one. */
function openingOf(p: PendingCharge): WindowOpening {
  return p.operation === 'check_create' && p.opens === 'requisites' ? 'requisites_check' : p.opens!;
}

export class ChargeBook {
  constructor(private readonly options: ChargeBookOptions) {}

  async open(req: ChargeRequest): Promise<{ ok: true; charge: OpenCharge } | BudgetDenial> {
    const { store, budgets, clock, replicaId, leaseMs } = this.options;
    const specs = budgets.counterSpecs(req.app);
    const now = clock.now();
    const pending: PendingCharge = copyWith(req, {
      at: now,
      counters: specs.map((s) => s.key),
      counterTtlMs: budgets.counterTtlMs,
      owner: replicaId,
      leaseUntil: now + leaseMs,
      reconcileAttempts: 0,
    });
    const result = await store.openCharge(pending, specs);
    if (!result.ok) return budgets.denial(req.app, result, req.estimateMinor);
    const lease = keepAlive(
      clock,
      Math.max(1, Math.floor(leaseMs / 3)),
      () => store.renewCharge(pending.key, replicaId, clock.now() + leaseMs),
      (err) => this.options.onError?.(err, 'pending charge lease renewal failed'),
    );
    return { ok: true, charge: { pending, lease, ended: false } };
  }

  /** The upstream charged `facts.amountMinor` (> 0). */
  async record(charge: OpenCharge, facts: AnswerFacts): Promise<Recorded> {
    this.end(charge);
    return this.recordPending(charge.pending, facts);
  }

  /** Records a pending entry (this replica's, or one the reconciler took over). */
  async recordPending(p: PendingCharge, facts: AnswerFacts): Promise<Recorded> {
    const record: ChargeRecord = {
      key: p.key,
      amountMinor: facts.amountMinor,
      entry: {
        at: facts.startedAt,
        app: p.app,
        operation: p.operation,
        kind: p.kind,
        inn: p.inn,
        amountMinor: facts.amountMinor,
        upstreamRequestId: facts.upstreamRequestId,
        requestId: p.requestId,
        idempotencyKey: p.replayKey ?? p.key,
        ...(facts.reconciled ? { reconciled: true } : {}),
      },
      counters: p.counters,
      counterTtlMs: p.counterTtlMs,
      ...(p.opens && facts.opensWindow
        ? { window: { inn: p.inn, kind: openingOf(p), until: facts.startedAt + this.options.windowMs } }
        : {}),
    };
    const result = await this.options.outbox.submit({ op: 'record', record });
    if (result === null || result.recorded) this.options.budgets.noteSpent(p.app, facts.amountMinor);
    if (result === null) return { chargedMinor: facts.amountMinor, windows: null, stored: false };
    return {
      chargedMinor: result.recorded ? facts.amountMinor : 0,
      windows: result.windows,
      stored: true,
    };
  }

  /**
   * The next attempt will carry `replayKey` instead of the current key (the last answer proved no
   * charge, and an upstream that stores error answers would replay it to the same key for a day).
   * The pending entry learns it first, so a reconciliation replays what was really sent. false:
   * the store did not take it, and the caller must keep the old key.
   */
  async rekey(charge: OpenCharge, replayKey: string): Promise<boolean> {
    const { store, clock, replicaId, leaseMs } = this.options;
    try {
      if (!(await store.renewCharge(charge.pending.key, replicaId, clock.now() + leaseMs, replayKey)))
        return false;
    } catch (err) {
      this.options.onError?.(err, 'could not switch a charged retry to a fresh key');
      return false;
    }
    (charge.pending as { replayKey?: string }).replayKey = replayKey;
    return true;
  }

  /** The upstream proved it charged nothing. */
  async release(charge: OpenCharge): Promise<void> {
    this.end(charge);
    await this.options.outbox.submit({ op: 'release', key: charge.pending.key });
  }

  /**
   * release() of a charge that held nothing (estimated 0), after the answer it belongs to has been
   * written: its lease ends now; the store hears of it on the next turn of the event loop (a send
   * to Redis before the answer cost that answer up to 0.17 ms here).
   */
  releaseLater(charge: OpenCharge): void {
    this.end(charge);
    this.options.outbox.submitLater({ op: 'release', key: charge.pending.key });
  }

  /**
   * Work a request leaves running after its answer is written (a paid call's record, then the
   * company's lock given back): a graceful shutdown waits for it (ChargeOutbox.close), as for a
   * record applied now. Until the record is applied, the pending entry written by open() is what
   * finds the charge after a crash (its lease runs out, the reconciler replays the key).
   */
  track(work: Promise<unknown>): void {
    this.options.outbox.track(work);
  }

  /**
   * No answer: the entry stays counted and its lease ends now, so the reconciler resolves it at
   * once (a store fault here only delays that until the lease runs out by itself).
   */
  async unknown(charge: OpenCharge): Promise<void> {
    this.end(charge);
    await this.options.store
      .renewCharge(charge.pending.key, this.options.replicaId, 0)
      .catch((err: unknown) =>
        this.options.onError?.(err, 'could not hand an unknown charge to the reconciler'),
      );
  }

  private end(charge: OpenCharge): void {
    charge.ended = true;
    charge.lease.stop();
  }
}
