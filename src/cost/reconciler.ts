// The reconciler (issue #10): resolves charges whose outcome is unknown — a call that timed
// out or lost its connection, a replica that died mid-call (its lease ran out), a record that
// failed — by replaying the SAME idempotency key upstream within its lifetime (one day) and
// recording what the upstream says was charged, or releasing the hold when the replay proves no
// charge. Runs on every replica; one at a time works, by a lease on a store lock.
//
// The replay goes through the governed upstream (the shared rate budget) as the gateway's own
// call. A replay of a call that never reached the upstream is a new call, charged now: it is
// recorded like any other charge (the money is spent either way, and the window opens).
//
// Must never: release a hold without proof of no charge, or resolve an entry whose lease is live.
import type { Clock } from '../clock.ts';
import type { RouteName } from '../route-table.ts';
import type { ChargeStore, PendingCharge, StateStore } from '../store/store.ts';
import { type GovernedResponse, type GovernedUpstream, sentOrThrow } from '../upstream/governed-upstream.ts';
import type { ChargeBook } from './charge-book.ts';
import type { ChargeOutbox } from './charge-outbox.ts';

export interface ReconcilerOptions {
  store: Pick<ChargeStore, 'pendingCharges' | 'takeOverCharge' | 'renewCharge'> &
    Pick<StateStore, 'acquireLock' | 'renewLock'>;
  upstream: Pick<GovernedUpstream, 'request'>;
  book: ChargeBook;
  outbox: ChargeOutbox;
  clock: Clock;
  replicaId: string;
  /** How often a replica looks for entries to resolve. */
  intervalMs: number;
  /** Lease on the reconciler lock and on each entry it takes over. */
  leaseMs: number;
  /** Per replay upstream timeout. */
  timeoutMs: number;
  /** Entries older than this can no longer be replayed safely (the key's lifetime, less margin). */
  maxReplayAgeMs: number;
  onResolved?: (p: PendingCharge, outcome: ReconcileOutcome) => void;
  onError?: (err: unknown, what: string) => void;
}

export type ReconcileOutcome = 'recorded' | 'released' | 'retry_later' | 'kept_unresolved';

const LOCK = 'reconciler';
/** Answers that say "try again later" rather than "nothing was charged". */
const TRANSIENT = new Set([409, 429, 500, 502, 504]);
/**
 * Answers that say nothing about the key's charge whatever headers they carry: 409 (the original
 * call is still executing upstream and may yet charge) and 429 (the replay was not run). The
 * emulator sends `X-Charged-Minor: 0` on every answer of a charged route, errors included.
 */
const NEVER_PROOF = new Set([409, 429]);

export class Reconciler {
  private readonly stop = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly options: ReconcilerOptions) {}

  start(): void {
    this.loop ??= (async () => {
      while (!this.stop.signal.aborted) {
        await this.options.clock.sleep(this.options.intervalMs, this.stop.signal);
        if (this.stop.signal.aborted) return;
        await this.runOnce().catch((err: unknown) => this.options.onError?.(err, 'reconciler round failed'));
      }
    })();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }

  /** One round: when this replica holds the lock, resolves every entry whose lease ended. */
  async runOnce(): Promise<Record<ReconcileOutcome, number>> {
    const { store, replicaId, leaseMs, clock } = this.options;
    const counts: Record<ReconcileOutcome, number> = {
      recorded: 0,
      released: 0,
      retry_later: 0,
      kept_unresolved: 0,
    };
    const held =
      (await store.acquireLock(LOCK, replicaId, leaseMs)) ||
      (await store.renewLock(LOCK, replicaId, leaseMs));
    if (!held) return counts;
    for (const p of await store.pendingCharges(500)) {
      if (this.stop.signal.aborted) break;
      const now = clock.now();
      if (p.leaseUntil > now) continue;
      const mine = await store.takeOverCharge(p.key, replicaId, now, now + leaseMs);
      if (!mine) continue;
      const outcome = await this.resolve(mine);
      counts[outcome]++;
      this.options.onResolved?.(mine, outcome);
    }
    return counts;
  }

  private async resolve(p: PendingCharge): Promise<ReconcileOutcome> {
    const { clock, book, outbox } = this.options;
    if (clock.now() - p.at > this.options.maxReplayAgeMs) {
      // Past the key's lifetime a replay would be a new call: keep it counted at its estimate.
      await book.recordPending(p, {
        amountMinor: Math.max(1, p.estimateMinor),
        upstreamRequestId: null,
        startedAt: p.at,
        opensWindow: false,
      });
      return 'kept_unresolved';
    }
    let res: GovernedResponse;
    try {
      // Not started (the rate queue refused): tried again next round, like a failed replay.
      res = sentOrThrow(
        await this.options.upstream.request({
          app: '_gateway',
          route: p.operation as RouteName,
          maxWaitMs: Math.min(5_000, this.options.timeoutMs),
          method: p.method,
          path: p.target,
          headers: {
            accept: 'application/json',
            'idempotency-key': p.replayKey ?? p.key,
            ...(p.body !== null ? { 'content-type': 'application/json' } : {}),
          },
          ...(p.body !== null ? { body: p.body } : {}),
          timeoutMs: this.options.timeoutMs,
        }),
      );
    } catch (err) {
      this.options.onError?.(err, 'reconciler replay failed; tried again next round');
      return this.later(p);
    }
    const reported = Number(res.headers['x-charged-minor'] ?? '0');
    const charged = Number.isSafeInteger(reported) && reported > 0 ? reported : 0;
    if (charged > 0) {
      await book.recordPending(p, {
        amountMinor: charged,
        upstreamRequestId: res.headers['x-request-id'] ?? null,
        startedAt: p.at,
        opensWindow: res.status === 200,
        reconciled: true,
      });
      return 'recorded';
    }
    if (
      NEVER_PROOF.has(res.status) ||
      (TRANSIENT.has(res.status) && res.headers['x-charged-minor'] === undefined)
    ) {
      // 409 still executing, 429, a register or the upstream failing: ask again later. (502
      // source_unavailable without X-Charged-Minor on a read is taken as not yet known.)
      return this.later(p);
    }
    await outbox.submit({ op: 'release', key: p.key });
    return 'released';
  }

  /**
   * Hands the entry back for a later round, after a backoff that grows with its attempts (a
   * replay that keeps failing must not spend the shared rate budget every round).
   */
  private async later(p: PendingCharge): Promise<ReconcileOutcome> {
    const backoffMs = Math.min(60_000, 1_000 * 2 ** Math.min(6, p.reconcileAttempts));
    await this.options.store
      .renewCharge(p.key, this.options.replicaId, this.options.clock.now() + backoffMs)
      .catch(() => {});
    return 'retry_later';
  }
}
