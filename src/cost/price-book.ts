// The gateway's copy of upstream GET /v1/me: prices and wallet, refreshed in the background.
// Prices are never hard-coded: until the first refresh succeeds every price is unknown, and
// a price the upstream stops listing (or `prices: null`, "not yet known") keeps its last known
// value for budget estimates only. A budget estimate with no price ever known is refused with
// `prices_unknown` (503, Retry-After) and fetches /v1/me again, at most every few seconds.
// It never blocks a free call (callers ask for a price only when a charge is expected), and
// `wallet: null` is kept as is: nothing here reads the balance.
//
// Prices are also learned from every charge (issue 28): the spec says a new price is charged a
// few seconds BEFORE /v1/me shows it, so the X-Charged-Minor of a charge is the freshest price
// there is. A charge that differs from the book sets the kind's price at once (and the server
// spreads it to every replica over the bus), so only calls already in flight when the first
// new-price answer arrived can pass a cap by the price delta. A learned price wins over /v1/me
// until /v1/me shows the same amount or LEARNED_TRUST_MS pass (then /v1/me is the truth again:
// a learned price never outlives the vendor's own table for long). Among learned prices the one
// from the call that started last wins, so a replayed answer of an older call cannot undo it.
//
// Must never: take a price from an answer that was not a charge of that kind, or let an older
// call's charge replace a newer one's.
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { UpstreamRequest, UpstreamResponse } from '../upstream/upstream-client.ts';
import type { PriceKind } from './estimate.ts';

export interface MeBody {
  account?: unknown;
  key?: unknown;
  wallet?: { balance_minor: number; as_of: string } | null;
  prices?: Array<{ key: string; title?: string; price_minor: number; is_individual?: boolean }> | null;
  [field: string]: unknown;
}

export interface PriceBookOptions {
  /** GET /v1/me; the server passes a call that spends the shared key budget like any other. */
  upstream: { request(req: UpstreamRequest): Promise<UpstreamResponse> };
  clock: Clock;
  refreshMs: number;
  timeoutMs: number;
  onError?: (err: unknown) => void;
  onRefresh?: (me: MeBody) => void;
  /** Least time between two refreshes asked for by refused estimates; default min(refreshMs, 5 s). */
  unknownRetryMs?: number;
  /** A price learned from a charge, here (spread: true, to publish) or from another replica. */
  onLearn?: (learned: LearnedPrice, spread: boolean) => void;
  /** How long a learned price outranks a /v1/me that shows another amount; default LEARNED_TRUST_MS. */
  learnedTrustMs?: number;
}

/** A price seen in a charge: what was charged, and when the call that paid it started (ms). */
export interface LearnedPrice {
  kind: string;
  priceMinor: number;
  startedAt: number;
}

/** The bus channel learned prices travel on between replicas. */
export const PRICES_CHANNEL = 'prices:learned';

/** A learned price from the bus, or null when the message is not one. */
export function parseLearnedPrice(message: string): LearnedPrice | null {
  try {
    const m = JSON.parse(message) as Partial<LearnedPrice>;
    return typeof m.kind === 'string' && Number.isSafeInteger(m.priceMinor) && Number.isFinite(m.startedAt)
      ? { kind: m.kind, priceMinor: m.priceMinor as number, startedAt: m.startedAt as number }
      : null;
  } catch {
    return null;
  }
}

/** The spec's lag of /v1/me behind a price change is "a few seconds"; two minutes is ample. */
export const LEARNED_TRUST_MS = 120_000;

export class PriceBook {
  private me: MeBody | null = null;
  private refreshedAt = 0;
  private readonly current = new Map<string, number>();
  private readonly lastKnown = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> | null = null;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  /** Learned prices and when each was learned here (ms, this clock). */
  private readonly learned = new Map<string, LearnedPrice & { learnedAt: number }>();

  constructor(private readonly options: PriceBookOptions) {}

  /** Fetches once now (errors reported, not thrown), then every refreshMs. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
    this.timer.unref();
  }

  refresh(): Promise<void> {
    this.inflight ??= (async () => {
      this.lastAttemptAt = this.options.clock.now();
      try {
        const res = await this.options.upstream.request({
          method: 'GET',
          path: '/v1/me',
          timeoutMs: this.options.timeoutMs,
        });
        if (res.status !== 200) throw new Error(`GET /v1/me answered ${res.status}`);
        this.apply(JSON.parse(res.body.toString('utf8')) as MeBody);
      } catch (err) {
        this.options.onError?.(err);
      } finally {
        this.inflight = null;
      }
    })();
    return this.inflight;
  }

  apply(me: MeBody): void {
    this.me = me;
    this.refreshedAt = this.options.clock.now();
    this.current.clear();
    for (const p of me.prices ?? []) {
      this.current.set(p.key, p.price_minor);
      this.lastKnown.set(p.key, p.price_minor);
    }
    const trustMs = this.options.learnedTrustMs ?? LEARNED_TRUST_MS;
    for (const [kind, l] of this.learned) {
      // /v1/me caught up with the charge, or had long enough to: it is the truth again.
      if (this.current.get(kind) === l.priceMinor || this.refreshedAt - l.learnedAt >= trustMs)
        this.learned.delete(kind);
    }
    this.options.onRefresh?.(me);
  }

  /**
   * A charge of `kind` cost `priceMinor` on a call started at `startedAt`. Returns true when it
   * changed the price (then `onLearn` is told; `spread` false for one heard from another replica).
   */
  learn(learned: LearnedPrice, spread = true): boolean {
    const { kind, priceMinor, startedAt } = learned;
    if (!Number.isSafeInteger(priceMinor) || priceMinor <= 0) return false;
    const previous = this.learned.get(kind);
    if (previous && previous.startedAt > startedAt) return false; // an older call's charge
    const effective = previous?.priceMinor ?? this.current.get(kind) ?? this.lastKnown.get(kind);
    if (effective === priceMinor) {
      if (previous) previous.startedAt = Math.max(previous.startedAt, startedAt);
      return false;
    }
    this.learned.set(kind, { kind, priceMinor, startedAt, learnedAt: this.options.clock.now() });
    this.options.onLearn?.({ kind, priceMinor, startedAt }, spread);
    return true;
  }

  /** Prices learned from charges that /v1/me does not show yet. */
  learnedPrices(): LearnedPrice[] {
    return [...this.learned.values()].map(({ kind, priceMinor, startedAt }) => ({
      kind,
      priceMinor,
      startedAt,
    }));
  }

  /** The current price, or null when unknown (prices not yet known, or the kind not on sale). */
  price(kind: PriceKind): number | null {
    return this.learned.get(kind)?.priceMinor ?? this.current.get(kind) ?? null;
  }

  /**
   * For budget estimates: the current price, else the last one ever seen. With none ever
   * seen it throws `prices_unknown`: a capped app's paid call cannot be reserved against its
   * budget, and letting it through at 0 could pass the cap by a whole price.
   */
  priceForBudget(kind: PriceKind): number {
    const known = this.learned.get(kind)?.priceMinor ?? this.current.get(kind) ?? this.lastKnown.get(kind);
    if (known !== undefined) return known;
    const retryMs = this.options.unknownRetryMs ?? Math.min(this.options.refreshMs, 5000);
    const now = this.options.clock.now();
    let waitMs = this.lastAttemptAt + retryMs - now;
    if (waitMs <= 0 && this.inflight === null) {
      void this.refresh();
      waitMs = 1000;
    }
    throw new ApiError(
      'prices_unknown',
      { kind, me_prices: this.me === null ? 'not_fetched' : this.me.prices === null ? 'null' : 'not_listed' },
      `The ${kind} price is not known yet (upstream GET /v1/me has not listed it) and a spend budget applies; retry shortly`,
      { headers: { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) } },
    );
  }

  snapshot(): { me: MeBody | null; refreshedAt: number } {
    return { me: this.me, refreshedAt: this.refreshedAt };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
