// The gateway's copy of upstream GET /v1/me: prices and wallet, refreshed in the background.
// Prices are never hard-coded: until the first refresh succeeds every price is unknown, and
// a price the upstream stops listing (or `prices: null`, "not yet known") keeps its last known
// value for budget estimates only. A budget estimate with no price ever known is refused with
// `prices_unknown` (503, Retry-After) and fetches /v1/me again, at most every few seconds.
// It never blocks a free call (callers ask for a price only when a charge is expected), and
// `wallet: null` is kept as is: nothing here reads the balance.
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
}

export class PriceBook {
  private me: MeBody | null = null;
  private refreshedAt = 0;
  private readonly current = new Map<string, number>();
  private readonly lastKnown = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> | null = null;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;

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
    this.options.onRefresh?.(me);
  }

  /** The current price, or null when unknown (prices not yet known, or the kind not on sale). */
  price(kind: PriceKind): number | null {
    return this.current.get(kind) ?? null;
  }

  /**
   * For budget estimates: the current price, else the last one ever seen. With none ever
   * seen it throws `prices_unknown`: a capped app's paid call cannot be reserved against its
   * budget, and letting it through at 0 could pass the cap by a whole price.
   */
  priceForBudget(kind: PriceKind): number {
    const known = this.current.get(kind) ?? this.lastKnown.get(kind);
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
