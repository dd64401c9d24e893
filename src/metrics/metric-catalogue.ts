// Every metric the gateway exports, declared once: name, help, type and label names. The
// dashboards (grafana/), the alert rules (deploy/prometheus/) and README's table are checked
// against this list by tests, so a series nothing exports cannot be charted or alerted on.
//
// Label values come only from config (app names) and fixed sets (routes, limit classes, price
// kinds, error codes, periods). Must never carry an INN, a token, a check id or a request id.

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricSpec {
  name: string;
  type: MetricType;
  help: string;
  labels: readonly string[];
  /** Read from the shared store at scrape time: every replica reports the same value (use max). */
  shared?: boolean;
  buckets?: readonly number[];
}

/** Label value for the global (all apps) budget. */
export const GLOBAL_APP = '_global';
/** Label value for requests that never authenticated (401, unknown path). */
export const UNKNOWN_APP = '_unknown';

export const SAVING_REASONS = ['cache', 'window', 'coalesced', 'idempotent', 'derived'] as const;
export type SavingReason = (typeof SAVING_REASONS)[number];

export const WEBHOOK_EVENT_RESULTS = [
  'accepted',
  'duplicate',
  'bad_signature',
  'stale',
  'malformed',
  'store_error',
] as const;
export type WebhookEventResult = (typeof WEBHOOK_EVENT_RESULTS)[number];
export const WEBHOOK_DELIVERY_RESULTS = ['delivered', 'retry', 'failed', 'no_secret'] as const;
export type WebhookDeliveryResult = (typeof WEBHOOK_DELIVERY_RESULTS)[number];

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WAIT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export const METRICS = {
  requests: {
    name: 'cpgw_requests_total',
    type: 'counter',
    help: 'Answers to apps, by app, route, HTTP status and X-Cache (empty when the route is not cached)',
    labels: ['app', 'route', 'status', 'cache'],
  },
  errors: {
    name: 'cpgw_errors_total',
    type: 'counter',
    help: 'Error answers by error code (the envelope code; upstream codes pass through)',
    labels: ['app', 'route', 'code'],
  },
  upstreamRequests: {
    name: 'cpgw_upstream_requests_total',
    type: 'counter',
    help: 'Upstream answers by route, HTTP status and error code (empty on success)',
    labels: ['route', 'status', 'code'],
  },
  upstreamRateLimited: {
    name: 'cpgw_upstream_rate_limited_total',
    type: 'counter',
    help: 'Upstream 429 answers (rate_limited or quota_exceeded); the gateway aims for zero',
    labels: ['route', 'code'],
  },
  upstreamFailures: {
    name: 'cpgw_upstream_failures_total',
    type: 'counter',
    help: 'Upstream calls that failed: 5xx answers, timeouts, connection errors',
    labels: ['route', 'kind'],
  },
  spend: {
    name: 'cpgw_spend_minor_total',
    type: 'counter',
    help: 'Kopecks charged by the upstream, as written to the spend ledger',
    labels: ['app', 'kind'],
  },
  saved: {
    name: 'cpgw_saved_minor_total',
    type: 'counter',
    help: 'Kopecks the same call would have cost sent straight to the upstream (README "Savings")',
    labels: ['app', 'kind', 'reason'],
  },
  budgetRejections: {
    name: 'cpgw_budget_rejections_total',
    type: 'counter',
    help: 'Requests refused 402 budget_exceeded, by the budget that refused (app or _global)',
    labels: ['app', 'budget', 'period'],
  },
  rateLimitRejections: {
    name: 'cpgw_ratelimit_rejections_total',
    type: 'counter',
    help: "Requests refused 429 rate_limited by the gateway's own queue",
    labels: ['app', 'limit', 'reason'],
  },
  softLimitCrossings: {
    name: 'cpgw_budget_soft_crossings_total',
    type: 'counter',
    help: 'Soft budget thresholds crossed (one per budget and period across all replicas)',
    labels: ['app', 'period'],
  },
  softLimitNotices: {
    name: 'cpgw_soft_limit_notices_total',
    type: 'counter',
    help: 'Soft-limit notices POSTed to notices.url, by result (sent, failed)',
    labels: ['result'],
  },
  webhookEvents: {
    name: 'cpgw_webhook_events_total',
    type: 'counter',
    help: 'Upstream webhook deliveries at the ingress, by result (accepted, duplicate, bad_signature, stale, malformed, store_error)',
    labels: ['result'],
  },
  webhookDeliveries: {
    name: 'cpgw_webhook_deliveries_total',
    type: 'counter',
    help: 'Attempts to deliver events to apps, by app and result (delivered, retry, failed, no_secret)',
    labels: ['app', 'result'],
  },
  storeErrors: {
    name: 'cpgw_store_errors_total',
    type: 'counter',
    help: 'Shared-store faults met by a component (cache, limiter, budget, request, scrape)',
    labels: ['source'],
  },
  logLinesDropped: {
    name: 'cpgw_log_lines_dropped_total',
    type: 'counter',
    help: "Log lines the process dropped because stdout's reader was too far behind (8 MiB waiting) or gone",
    labels: [],
  },
  requestDuration: {
    name: 'cpgw_request_duration_seconds',
    type: 'histogram',
    help: 'Time to answer an app, by route and X-Cache',
    labels: ['route', 'cache'],
    buckets: DURATION_BUCKETS,
  },
  upstreamDuration: {
    name: 'cpgw_upstream_duration_seconds',
    type: 'histogram',
    help: 'Upstream call time (one attempt, queue wait excluded)',
    labels: ['route'],
    buckets: DURATION_BUCKETS,
  },
  queueWait: {
    name: 'cpgw_queue_wait_seconds',
    type: 'histogram',
    help: 'Time an upstream call waited in the rate queue, by its first limit class',
    labels: ['limit'],
    buckets: WAIT_BUCKETS,
  },
  queueDepth: {
    name: 'cpgw_queue_depth',
    type: 'gauge',
    help: "Calls waiting in this replica's rate queue, per limit class (sum across replicas)",
    labels: ['limit'],
  },
  ledgerPendingAge: {
    name: 'cpgw_ledger_pending_oldest_age_seconds',
    type: 'gauge',
    help: 'Age of the oldest pending (unsettled) ledger entry; 0 when none',
    labels: [],
  },
  ledgerOutbox: {
    name: 'cpgw_ledger_outbox_entries',
    type: 'gauge',
    help: 'Paid answers waiting in the local outbox for the store to come back',
    labels: [],
  },
  storeUp: {
    name: 'cpgw_store_up',
    type: 'gauge',
    help: '1 when the last scrape-time read of shared state succeeded in time, else 0',
    labels: [],
  },
  sharedReadSeconds: {
    name: 'cpgw_shared_read_seconds',
    type: 'gauge',
    help: 'How long the last scrape-time read of shared state took',
    labels: [],
  },
  budgetLimit: {
    name: 'cpgw_budget_limit_minor',
    type: 'gauge',
    help: 'Hard budget cap per app (or _global) and period',
    labels: ['app', 'period'],
    shared: true,
  },
  budgetSoft: {
    name: 'cpgw_budget_soft_minor',
    type: 'gauge',
    help: 'Soft budget threshold per app (or _global) and period',
    labels: ['app', 'period'],
    shared: true,
  },
  budgetSpent: {
    name: 'cpgw_budget_spent_minor',
    type: 'gauge',
    help: 'Spent in the current period per app (or _global)',
    labels: ['app', 'period'],
    shared: true,
  },
  budgetReserved: {
    name: 'cpgw_budget_reserved_minor',
    type: 'gauge',
    help: 'Reserved by calls in flight (or of unknown outcome) in the current period',
    labels: ['app', 'period'],
    shared: true,
  },
  budgetForecast: {
    name: 'cpgw_budget_forecast_minor',
    type: 'gauge',
    help: 'Spend forecast for the end of the current period per app (or _global): spent + recent daily rate over the time left (README "Forecasts")',
    labels: ['app', 'period'],
    shared: true,
  },
  budgetSoftExceeded: {
    name: 'cpgw_budget_soft_exceeded',
    type: 'gauge',
    help: '1 when spent has reached the soft threshold in the current period',
    labels: ['app', 'period'],
    shared: true,
  },
  budgetPeriodRemaining: {
    name: 'cpgw_budget_period_remaining_seconds',
    type: 'gauge',
    help: 'Seconds until the current budget period ends (cost.timeZone): burn-down and forecasts',
    labels: ['period'],
  },
  price: {
    name: 'cpgw_price_minor',
    type: 'gauge',
    help: 'Current upstream price per kind (from GET /v1/me)',
    labels: ['kind'],
    shared: true,
  },
  walletBalance: {
    name: 'cpgw_wallet_balance_minor',
    type: 'gauge',
    help: 'Upstream wallet balance as last read from GET /v1/me',
    labels: [],
    shared: true,
  },
  clockSkew: {
    name: 'cpgw_clock_skew_seconds',
    type: 'gauge',
    help: "This replica's clock minus the money store's (the clock budget periods and leases follow)",
    labels: [],
  },
  configInfo: {
    name: 'cpgw_config_info',
    type: 'gauge',
    help: "1 with this replica's config hash (the effective config without secrets); CpgwConfigDrift fires when live replicas differ",
    labels: ['hash'],
  },
  walletLowBalanceHorizon: {
    name: 'cpgw_wallet_low_balance_horizon_seconds',
    type: 'gauge',
    help: 'finance.lowBalanceDays in seconds: CpgwWalletLowBalance fires when the wallet covers less time of average spend',
    labels: [],
    shared: true,
  },
  walletUnattributed: {
    name: 'cpgw_wallet_unattributed_minor_total',
    type: 'counter',
    help: "Kopecks the vendor's wallet fell by beyond the ledger's charges (another key, the cabinet, or a lost charge); sum over replicas",
    labels: [],
  },
  walletTopUps: {
    name: 'cpgw_wallet_topups_minor_total',
    type: 'counter',
    help: "Kopecks the vendor's wallet rose by beyond the ledger's charges (top-ups); sum over replicas",
    labels: [],
  },
  rateLimit: {
    name: 'cpgw_ratelimit_limit',
    type: 'gauge',
    help: 'Calls allowed per window in a limit class, across replicas',
    labels: ['limit'],
    shared: true,
  },
  rateRemaining: {
    name: 'cpgw_ratelimit_remaining',
    type: 'gauge',
    help: 'Calls left in the current window of a limit class, across replicas',
    labels: ['limit'],
    shared: true,
  },
  ratePaused: {
    name: 'cpgw_ratelimit_paused_seconds',
    type: 'gauge',
    help: 'Seconds a limit class stays paused after an upstream 429',
    labels: ['limit'],
    shared: true,
  },
  windowsOpen: {
    name: 'cpgw_windows_open',
    type: 'gauge',
    help: 'Companies with an open coverage window, by widest window (capped at metrics.windowsScanLimit)',
    labels: ['kind'],
    shared: true,
  },
  cacheBytes: {
    name: 'cpgw_cache_bytes',
    type: 'gauge',
    help: 'Bytes the cache store holds',
    labels: [],
    shared: true,
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricKey = keyof typeof METRICS;

/** Every series name a scrape can show, histogram parts included (dashboard and rule tests). */
export function exportedSeriesNames(): Set<string> {
  const names = new Set<string>();
  for (const spec of Object.values(METRICS) as MetricSpec[]) {
    if (spec.type === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(spec.name + suffix);
    } else names.add(spec.name);
  }
  return names;
}
