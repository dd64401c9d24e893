// The gateway's copy of upstream GET /v1/me: prices and wallet, refreshed in the background.
// Prices are never hard-coded: until the first refresh succeeds every price is unknown, and
// a price the upstream stops listing keeps its last known value for budget estimates only.
import type { Clock } from '../clock.ts';
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
}

export class PriceBook {
  private me: MeBody | null = null;
  private refreshedAt = 0;
  private readonly current = new Map<string, number>();
  private readonly lastKnown = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> | null = null;

  constructor(private readonly options: PriceBookOptions) {}

  /** Fetches once now (errors reported, not thrown), then every refreshMs. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
    this.timer.unref();
  }

  refresh(): Promise<void> {
    this.inflight ??= (async () => {
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

  /** For budget estimates: the current price, else the last one ever seen. */
  priceForBudget(kind: PriceKind): number | null {
    return this.current.get(kind) ?? this.lastKnown.get(kind) ?? null;
  }

  snapshot(): { me: MeBody | null; refreshedAt: number } {
    return { me: this.me, refreshedAt: this.refreshedAt };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
