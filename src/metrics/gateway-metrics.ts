// The gateway's Prometheus registry and the calls that feed it. One instance per server (tests
// run several servers in one process), built from the catalogue in metric-catalogue.ts.
// Counters and histograms count what THIS replica did; shared gauges are filled at scrape time
// by SharedGauges (shared-gauges.ts). Counters whose label sets are fixed are created at 0 for
// every configured app, so rates and alerts have a series before the first event.
//
// Must never: take a label value from a request (INN, token, ids): apps come from config,
// routes, kinds, codes and classes from fixed sets, anything else is folded into "other".
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { PriceKind } from '../cost/estimate.ts';
import { ERRORS } from '../errors.ts';
import { LIMIT_CLASS_NAMES, routeClasses } from '../limits/limit-classes.ts';
import { stdoutLinesDropped } from '../logger.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { UPSTREAM_ROUTES } from '../route-table.ts';
import {
  GLOBAL_APP,
  METRICS,
  type MetricKey,
  type MetricSpec,
  SAVING_REASONS,
  type SavingReason,
  WEBHOOK_DELIVERY_RESULTS,
  WEBHOOK_EVENT_RESULTS,
  type WebhookDeliveryResult,
  type WebhookEventResult,
} from './metric-catalogue.ts';

export const PRICE_KINDS: readonly PriceKind[] = ['dossier', 'requisites', 'check', 'person'];
export const PERIOD_NAMES = ['day', 'month'] as const;
const ROUTE_NAMES = new Set<string>(UPSTREAM_ROUTES.map((r) => r.name));
const ERROR_CODES = new Set<string>(Object.keys(ERRORS));
const DENIAL_REASONS = ['deadline', 'app_cap', 'paused', 'shutdown'] as const;
const STORE_ERROR_SOURCES = ['cache', 'limiter', 'budget', 'request', 'scrape', 'notice'] as const;

type Metric = Counter<string> | Gauge<string> | Histogram<string>;
type Instruments = {
  [K in MetricKey]: (typeof METRICS)[K]['type'] extends 'counter'
    ? Counter<string>
    : (typeof METRICS)[K]['type'] extends 'gauge'
      ? Gauge<string>
      : Histogram<string>;
};

export interface GatewayMetricsOptions {
  /** App names from config: the only app label values besides _global and _unknown. */
  apps: readonly string[];
  /** The current price of a kind (null: unknown), for savings. */
  price: (kind: PriceKind) => number | null;
  /** Default process metrics (CPU, memory, event loop, GC). */
  defaultMetrics?: boolean;
  /** Log lines the process dropped so far (logger.ts stdoutLinesDropped by default). */
  logLinesDropped?: () => number;
}

/** The instruments the hit path feeds through GatewayMetrics.hit (flushed by their collect hook). */
const HIT_FED = new Set<MetricKey>(['requests', 'requestDuration', 'saved']);
const DURATION_BOUNDS: readonly number[] = METRICS.requestDuration.buckets;

interface PendingHits {
  requestLabels: Record<string, string>;
  durationLabels: Record<string, string>;
  savedLabels: Record<string, string> | null;
  count: number;
  saved: number;
  sum: number;
  /** Observations per bucket of DURATION_BOUNDS (le each bound), the last one above them all. */
  buckets: number[];
}

/** prom-client's own record of one histogram series (lib/histogram.js). */
interface SeriesRecord {
  labels: Record<string, string>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/**
 * Adds `count` observations already sorted into the histogram's buckets (`buckets[i]`: how many
 * fell in (bound[i-1], bound[i]]; the last entry: above every bound) to one series. prom-client
 * has no bulk observe: this adds to its series record, the same fields observe() adds to (a unit
 * test holds the result against observe() on the same values, so a prom-client that keeps its
 * series otherwise fails it); without such a record it observes each bucket's bound instead.
 */
export function addBucketed(
  h: Histogram<string>,
  labels: Record<string, string>,
  buckets: readonly number[],
  sum: number,
  count: number,
): void {
  const bounds = (h as unknown as { upperBounds?: number[] }).upperBounds;
  const map = (h as unknown as { hashMap?: Record<string, SeriesRecord> }).hashMap;
  const find = () =>
    map && Object.values(map).find((r) => Object.keys(labels).every((k) => r.labels?.[k] === labels[k]));
  let record = find();
  if (!record && map) {
    h.zero(labels);
    record = find();
  }
  if (record?.bucketValues && bounds && bounds.length === buckets.length - 1) {
    bounds.forEach((bound, i) => {
      record.bucketValues[bound] = (record.bucketValues[bound] ?? 0) + buckets[i]!;
    });
    record.sum += sum;
    record.count += count;
    return;
  }
  // Not prom-client's layout: the right count per bucket, each at its bound (the sum is approximate).
  buckets.forEach((n, i) => {
    const at = i < DURATION_BOUNDS.length ? DURATION_BOUNDS[i]! : 2 * DURATION_BOUNDS.at(-1)!;
    for (let k = 0; k < n; k++) h.observe(labels, at);
  });
}

/** prom-client default gauges whose names end in _total (sums of their by-type siblings). */
const NOT_COUNTERS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** Where savings and served requests are also counted (finance/savings-record.ts). */
export interface SavingsSink {
  saved(app: string, kind: string, reason: string, amountMinor: number): void;
  served(app: string, paid: boolean): void;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly m: Instruments;
  private readonly apps: Set<string>;
  /**
   * HITs written by the hit path, counted here and added to prom-client when the registry is
   * read (each instrument's collect hook): a HIT costs a few additions instead of three label
   * hashes and validations (~1 µs of a ~25 µs answer). Keyed app -> route -> kind, each level
   * by a string the caller already holds (a joined key cost a HIT a string to build and hash).
   */
  private readonly pendingHits = new Map<string, Map<string, Map<string | null, PendingHits>>>();

  /** What readLogDrops last read of the process's dropped log lines. */
  private logDropsSeen = 0;

  constructor(private readonly options: GatewayMetricsOptions) {
    this.apps = new Set(options.apps);
    const made: Partial<Record<MetricKey, Metric>> = {};
    for (const [key, spec] of Object.entries(METRICS) as [MetricKey, MetricSpec][]) {
      const base = {
        name: spec.name,
        help: spec.help,
        labelNames: [...spec.labels],
        registers: [this.registry],
        // Whoever reads these first gets the hit path's pending counts added.
        ...(HIT_FED.has(key) ? { collect: () => this.flushHits() } : {}),
        ...(key === 'logLinesDropped' ? { collect: () => this.readLogDrops() } : {}),
      };
      made[key] =
        spec.type === 'counter'
          ? new Counter(base)
          : spec.type === 'gauge'
            ? new Gauge(base)
            : new Histogram({ ...base, buckets: [...(spec.buckets ?? [])] });
    }
    this.m = made as Instruments;
    if (options.defaultMetrics !== false) {
      collectDefaultMetrics({ register: this.registry });
      // Gauges named like counters, which `promtool check metrics` refuses; each is the sum of
      // the same name without _total (by type), which stays.
      for (const name of NOT_COUNTERS) this.registry.removeSingleMetric(name);
    }
    this.zero();
  }

  /** The process's dropped log lines since the last scrape, added to the counter (its collect hook). */
  private readLogDrops(): void {
    const now = (this.options.logLinesDropped ?? stdoutLinesDropped)();
    if (now > this.logDropsSeen) this.m.logLinesDropped.inc(now - this.logDropsSeen);
    this.logDropsSeen = now;
  }

  /** An upstream webhook delivery at the ingress. */
  webhookEvent(result: WebhookEventResult): void {
    this.m.webhookEvents.inc({ result });
  }

  /** One attempt to deliver an event to an app's webhook. */
  webhookDelivery(app: string, result: WebhookDeliveryResult): void {
    this.m.webhookDeliveries.inc({ app: this.app(app), result });
  }

  /** Config reload: apps added to config get their own label (series at 0); removed ones keep theirs. */
  addApps(names: readonly string[]): void {
    const fresh = names.filter((n) => !this.apps.has(n));
    if (fresh.length === 0) return;
    for (const n of fresh) this.apps.add(n);
    this.flushHits(); // an app that was 'other' has its own series from now on
    this.pendingHits.clear();
    this.zero();
  }

  /** Creates the fixed-label counters at 0 so rates and alerts have a series from the start. */
  private zero(): void {
    const { m } = this;
    for (const app of this.apps) {
      for (const kind of PRICE_KINDS) {
        m.spend.inc({ app, kind }, 0);
        for (const reason of SAVING_REASONS) m.saved.inc({ app, kind, reason }, 0);
      }
      for (const period of PERIOD_NAMES) {
        m.budgetRejections.inc({ app, budget: 'app', period }, 0);
        m.budgetRejections.inc({ app, budget: GLOBAL_APP, period }, 0);
      }
      for (const limit of LIMIT_CLASS_NAMES)
        for (const reason of DENIAL_REASONS) m.rateLimitRejections.inc({ app, limit, reason }, 0);
    }
    for (const app of [...this.apps, GLOBAL_APP])
      for (const period of PERIOD_NAMES) m.softLimitCrossings.inc({ app, period }, 0);
    for (const route of ROUTE_NAMES) {
      for (const code of ['rate_limited', 'quota_exceeded']) m.upstreamRateLimited.inc({ route, code }, 0);
      for (const kind of ['status_5xx', 'timeout', 'connection']) m.upstreamFailures.inc({ route, kind }, 0);
    }
    for (const limit of LIMIT_CLASS_NAMES) m.queueDepth.set({ limit }, 0);
    for (const result of ['sent', 'failed']) m.softLimitNotices.inc({ result }, 0);
    for (const result of WEBHOOK_EVENT_RESULTS) m.webhookEvents.inc({ result }, 0);
    for (const app of this.apps)
      for (const result of WEBHOOK_DELIVERY_RESULTS) m.webhookDeliveries.inc({ app, result }, 0);
    for (const source of STORE_ERROR_SOURCES) m.storeErrors.inc({ source }, 0);
    m.ledgerPendingAge.set(0);
    m.ledgerOutbox.set(0);
  }

  app(name: string | null | undefined): string {
    return name && this.apps.has(name) ? name : name === GLOBAL_APP ? GLOBAL_APP : 'other';
  }

  static route(name: string | null | undefined): string {
    return name && ROUTE_NAMES.has(name) ? name : 'other';
  }

  static code(code: string | null | undefined): string {
    if (!code) return '';
    return ERROR_CODES.has(code) ? code : 'other';
  }

  /** A charge written to the ledger (execute.ts, where the entry is appended). */
  charge(app: string, kind: PriceKind, amountMinor: number): void {
    if (amountMinor > 0) this.m.spend.inc({ app: this.app(app), kind }, amountMinor);
  }

  /** Also told of every saving and hit-path answer: finance/savings-record.ts keeps them on record. */
  savings: SavingsSink | null = null;

  /** What this request would have cost sent straight to the upstream, and why it did not. */
  saved(ctx: RequestContext, reason: SavingReason, amountMinor: number): void {
    if (!ctx.app || !(amountMinor > 0)) return;
    const kind = ctx.shape?.kind ?? null;
    if (kind === null) return;
    ctx.savedMinor = (ctx.savedMinor ?? 0) + amountMinor;
    ctx.savedReason = reason;
    this.m.saved.inc({ app: this.app(ctx.app.name), kind, reason }, amountMinor);
    this.savings?.saved(ctx.app.name, kind, reason, amountMinor);
  }

  /**
   * The upstream price of this request if sent straight there now: 0 when an open window
   * covers it (`covered`), else the price of its kind (0 for free routes or unknown prices).
   */
  directCost(ctx: RequestContext, covered: boolean): number {
    return this.directCostOf(ctx.shape, covered);
  }

  /** directCost() from the charge shape alone (the hit path has no context). */
  directCostOf(shape: RequestContext['shape'], covered: boolean): number {
    if (!shape || shape.kind === null || (shape.covered !== null && covered)) return 0;
    return this.options.price(shape.kind) ?? 0;
  }

  /**
   * A HIT written by the hit path (pipeline/hit-path.ts): what request() and saved() record for
   * it, counted in place and handed to prom-client when the registry is read (flushHits).
   */
  hit(app: string, route: string, kind: string | null, savedMinor: number, seconds: number): void {
    let byRoute = this.pendingHits.get(app);
    if (!byRoute) {
      byRoute = new Map();
      this.pendingHits.set(app, byRoute);
    }
    let byKind = byRoute.get(route);
    if (!byKind) {
      byKind = new Map();
      byRoute.set(route, byKind);
    }
    let p = byKind.get(kind);
    if (!p) {
      const a = this.app(app);
      const r = GatewayMetrics.route(route);
      p = {
        requestLabels: { app: a, route: r, status: '200', cache: 'HIT' },
        durationLabels: { route: r, cache: 'HIT' },
        savedLabels: kind === null ? null : { app: a, kind, reason: 'cache' },
        count: 0,
        saved: 0,
        sum: 0,
        buckets: new Array<number>(DURATION_BOUNDS.length + 1).fill(0),
      };
      byKind.set(kind, p);
    }
    p.count++;
    p.sum += seconds;
    let b = 0;
    while (b < DURATION_BOUNDS.length && seconds > DURATION_BOUNDS[b]!) b++;
    p.buckets[b]!++;
    if (savedMinor > 0 && p.savedLabels) p.saved += savedMinor;
    if (this.savings) {
      this.savings.served(app, false);
      if (kind !== null) this.savings.saved(app, kind, 'cache', savedMinor);
    }
  }

  /** Adds the hit path's pending counts to the instruments (called before any read of them). */
  flushHits(): void {
    for (const byRoute of this.pendingHits.values())
      for (const byKind of byRoute.values()) for (const p of byKind.values()) this.flushHit(p);
  }

  private flushHit(p: PendingHits): void {
    if (p.count === 0) return;
    this.m.requests.inc(p.requestLabels, p.count);
    addBucketed(this.m.requestDuration, p.durationLabels, p.buckets, p.sum, p.count);
    if (p.saved > 0 && p.savedLabels) this.m.saved.inc(p.savedLabels, p.saved);
    p.count = 0;
    p.sum = 0;
    p.saved = 0;
    p.buckets.fill(0);
  }

  /** One answer to an app (the server's onResponse hook). */
  request(a: {
    app: string;
    route: string;
    status: number;
    cache: string;
    seconds: number;
    queuedMs?: number | undefined;
  }): void {
    const route = GatewayMetrics.route(a.route);
    this.m.requests.inc({ app: a.app, route, status: String(a.status), cache: a.cache });
    this.m.requestDuration.observe({ route, cache: a.cache }, a.seconds);
    if (a.queuedMs !== undefined && ROUTE_NAMES.has(route)) {
      const limit = routeClasses(route as Parameters<typeof routeClasses>[0])[0];
      if (limit) this.m.queueWait.observe({ limit }, a.queuedMs / 1000);
    }
  }

  error(app: string, route: string, code: string): void {
    this.m.errors.inc({
      app,
      route: GatewayMetrics.route(route),
      code: GatewayMetrics.code(code) || 'other',
    });
  }

  rateLimited(app: string, limit: string, reason: string): void {
    this.m.rateLimitRejections.inc({ app: this.app(app), limit, reason });
  }

  budgetRejected(app: string, scope: 'app' | 'global', period: string): void {
    this.m.budgetRejections.inc({ app: this.app(app), budget: scope === 'app' ? 'app' : GLOBAL_APP, period });
  }

  storeError(source: (typeof STORE_ERROR_SOURCES)[number]): void {
    this.m.storeErrors.inc({ source });
  }

  /** The upstream answered (one attempt). */
  upstreamAnswered(route: string, status: number, code: string | undefined, seconds: number): void {
    const r = GatewayMetrics.route(route);
    const c = GatewayMetrics.code(code);
    this.m.upstreamRequests.inc({ route: r, status: String(status), code: c });
    this.m.upstreamDuration.observe({ route: r }, seconds);
    if (status === 429) this.m.upstreamRateLimited.inc({ route: r, code: c || 'rate_limited' });
    if (status >= 500) this.m.upstreamFailures.inc({ route: r, kind: 'status_5xx' });
  }

  /** The upstream call failed without an answer. */
  upstreamFailed(route: string, kind: 'timeout' | 'connection' | 'aborted'): void {
    if (kind === 'aborted') return;
    this.m.upstreamFailures.inc({ route: GatewayMetrics.route(route), kind });
  }

  /**
   * Ledger backlog, reported by the ledger's reconciler (wired by the store work; until then
   * both stay 0): the age of the oldest pending entry and the local outbox length.
   */
  setLedgerBacklog(b: { pendingOldestAgeSeconds: number; outboxEntries: number }): void {
    this.m.ledgerPendingAge.set(b.pendingOldestAgeSeconds);
    this.m.ledgerOutbox.set(b.outboxEntries);
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
