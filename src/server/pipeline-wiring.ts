// The pipeline's parts, each built once from the dependencies and the configuration at start:
// the governed upstream (the shared rate budget), coverage windows, the money parts (money clock,
// budget guard, charge book, outbox, reconciler, wallet reconciliation), prices, check tickets,
// section verdicts and the response cache. Which part talks to which is decided here; reload.ts
// builds the next generation's budget guard and charge book with budgetGuard and chargesFor.
//
// Must never: start anything (no timer, no subscription, no I/O: lifecycle.ts does that once the
// server is ready), or read the config at request time (parts that follow a reload read
// `policy`, which reload.ts swaps).
import { randomUUID } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import type { Logger } from 'pino';
import { ResponseCache, resolveCacheConfig } from '../cache/index.ts';
import { SectionVerdicts } from '../cache/section-verdicts.ts';
import { CheckTickets } from '../checks/check-tickets.ts';
import { type Clock, type Random, systemRandom } from '../clock.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { BudgetGuard } from '../cost/budget-guard.ts';
import { ChargeBook } from '../cost/charge-book.ts';
import { ChargeGate } from '../cost/charge-gate.ts';
import { ChargeOutbox } from '../cost/charge-outbox.ts';
import { Coalescer } from '../cost/coalescer.ts';
import { MoneyClock } from '../cost/money-clock.ts';
import { PRICES_CHANNEL, PriceBook } from '../cost/price-book.ts';
import { Reconciler } from '../cost/reconciler.ts';
import { SpendLedger } from '../cost/spend-ledger.ts';
import { reconcile } from '../cost/wallet-reconciliation.ts';
import { WalletSnapshots } from '../cost/wallet-snapshots.ts';
import { WindowTracker } from '../cost/window-tracker.ts';
import { BudgetOverrides } from '../finance/budget-overrides.ts';
import type { FinanceStore } from '../finance/finance-store.ts';
import { RateGovernor } from '../limits/index.ts';
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import { SoftLimitNotices } from '../metrics/soft-limit-notices.ts';
import type { Tracing } from '../ops/tracing.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';
import type { Store } from '../store/store.ts';
import { GovernedUpstream, sentOrThrow } from '../upstream/governed-upstream.ts';
import type { UpstreamClient } from '../upstream/upstream-client.ts';

/** What the pipeline's parts are built from (buildServer's ServerDeps carry these and more). */
export interface PipelineInputs {
  config: GatewayConfig;
  upstream: UpstreamClient;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Jitter source (retry backoff); Math.random unless a test injects a seeded one. */
  random?: Random;
  /**
   * OpenTelemetry traces (src/ops/tracing.ts; main.ts starts it from OTEL_EXPORTER_OTLP_*).
   * Absent: tracing is off. Present: every /v1 request gets a SERVER span (a fast-path HIT one
   * span, pipeline/hit-path.ts `traced`); the caller flushes and shuts it down after close().
   */
  tracing?: Tracing;
}

/** The pipeline's parts, with what a reload needs to build the next generation on them. */
export type WiredPipeline = PipelineDeps & {
  policy: LivePolicy;
  notices: SoftLimitNotices;
  chargesFor: (guard: BudgetGuard) => ChargeBook;
  overrides: BudgetOverrides;
};

/** The governor's view of the apps of one configuration (a reload hands it the next one's). */
export function governorApps(config: GatewayConfig) {
  return config.apps.map((a) => ({
    name: a.name,
    weight: a.limits.weight,
    priority: a.limits.priority,
    caps: a.limits.caps,
  }));
}

/**
 * The configuration the server runs on now and its budget guard: swapped by a reload, read by
 * the parts built once (soft-limit notices) so they follow it.
 */
export interface LivePolicy {
  config: GatewayConfig;
  budgets: BudgetGuard;
}

/** Budget caps of one configuration (rebuilt on reload: caps are config, counters are in the store). */
export function budgetGuard(
  deps: Pick<PipelineInputs, 'config' | 'store' | 'clock'>,
  observer: SoftLimitNotices,
  overrides: BudgetOverrides,
): BudgetGuard {
  const { config, store, clock } = deps;
  return new BudgetGuard({
    store,
    clock,
    timeZone: config.cost.timeZone,
    global: config.budgets,
    apps: new Map(config.apps.map((a) => [a.name, a.budgets])),
    observer,
    overrides,
  });
}

/** The shared rate budget (docs/rate-limits.md) in front of the upstream client. */
function governedUpstream(deps: PipelineInputs, metrics: GatewayMetrics): GovernedUpstream {
  const { config, store, clock, logger } = deps;
  const onError = (err: unknown) => {
    metrics.storeError('limiter');
    logger.warn({ err: (err as Error)?.message ?? String(err) }, 'rate limiter fault');
  };
  const { expectedReplicas, ...classes } = config.limits;
  const governor = new RateGovernor({
    store,
    clock,
    // Only what config sets (absent fields stay absent): a key limit set there is a ceiling
    // over X-RateLimit-Limit.
    classes,
    expectedReplicas,
    onLocalMode: (local, cause) =>
      local
        ? logger.warn(
            { err: (cause as Error)?.message ?? String(cause), expectedReplicas },
            'store unreachable: rate limits on conservative local shares (limit / expectedReplicas)',
          )
        : logger.warn('store reachable again: rate limits back on the shared budget'),
    apps: governorApps(config),
    onError,
  });
  const observer = {
    answered: metrics.upstreamAnswered.bind(metrics),
    failed: metrics.upstreamFailed.bind(metrics),
  };
  return new GovernedUpstream({ client: deps.upstream, governor, onError, observer });
}

/** The pipeline's parts, each built once (a reload keeps them and swaps only the generation). */
export function wirePipeline(
  deps: PipelineInputs,
  metrics: GatewayMetrics,
  finance: FinanceStore,
): WiredPipeline {
  const { config, store, clock, logger } = deps;
  const upstream = governedUpstream(deps, metrics);
  const replicaId = randomUUID();
  const windowMs = config.cost.windowSeconds * 1000;
  const leaseMs = config.cost.leaseMs;
  const windows = new WindowTracker({
    store,
    clock,
    windowMs,
    safetyMarginMs: config.cost.safetyMarginSeconds * 1000,
  });
  const moneyFault = (err: unknown, what: string) =>
    logger.warn({ err: (err as Error)?.message ?? String(err) }, what);
  const { walletSnapshots, spendLedger, walletLagMs, reconcileWallet } = walletReconciliation(
    deps,
    metrics,
    moneyFault,
  );
  const moneyClock = moneyClockOf(deps, metrics, moneyFault);
  const policy = { config } as LivePolicy;
  const notices = new SoftLimitNotices({
    budgets: { status: (app) => policy.budgets.status(app) },
    store,
    metrics,
    logger,
    // Admin-set soft thresholds count as well as the config's.
    hasSoft: (app) => policy.budgets.hasSoft(app),
    notice: config.notices,
  });
  const overrides = new BudgetOverrides({
    store: finance,
    clock,
    onError: (err) =>
      logger.warn(
        { err: (err as Error)?.message ?? String(err) },
        'budget overrides unreadable; the last copy applies',
      ),
  });
  const budgets = budgetGuard({ config, store, clock: moneyClock }, notices, overrides);
  policy.budgets = budgets;
  const outbox = new ChargeOutbox({
    store,
    clock,
    stateDir: config.store.stateDir === null ? null : resolvePath(config.store.stateDir),
    onError: moneyFault,
    onApplied: (op) => logger.info({ op: op.op }, 'money operation reached the store from the outbox'),
  });
  // A reload builds a book on the next budget guard (its caps); the reconciler keeps this one.
  const chargesFor = (guard: BudgetGuard) =>
    new ChargeBook({
      store,
      budgets: guard,
      outbox,
      clock: moneyClock,
      replicaId,
      leaseMs,
      windowMs,
      onError: moneyFault,
    });
  const charges = chargesFor(budgets);
  const reconciler = new Reconciler({
    store,
    upstream,
    book: charges,
    outbox,
    clock: moneyClock,
    replicaId,
    intervalMs: config.cost.reconcileIntervalMs,
    leaseMs,
    timeoutMs: config.upstream.checkTimeoutMs,
    // The upstream keeps idempotency keys one day; replay well inside that.
    maxReplayAgeMs: 23 * 3_600_000,
    onResolved: (p, outcome) =>
      logger.warn(
        { idempotencyKey: p.key, app: p.app, operation: p.operation, outcome },
        'charge reconciled',
      ),
    onError: moneyFault,
  });
  return {
    policy,
    notices,
    chargesFor,
    overrides,
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
    config,
    upstream,
    limits: upstream.governor,
    store,
    clock,
    random: deps.random ?? systemRandom,
    logger,
    metrics,
    windows,
    gate: new ChargeGate({
      store,
      clock,
      windows,
      leaseMs,
      onError: (err) => moneyFault(err, 'charge lock renewal failed'),
    }),
    coalescer: new Coalescer({ store, clock, distributed: store.kind === 'redis', leaseMs, bus: store }),
    budgets,
    charges,
    outbox,
    reconciler,
    ledger: spendLedger,
    moneyClock,
    walletSnapshots,
    walletLagMs,
    prices: priceBookOf(deps, upstream, metrics, reconcileWallet),
    tickets: new CheckTickets(store),
    sections: new SectionVerdicts({
      state: store,
      modes: config.cache.sectionsFromDossier,
      learnAfter: config.cache.sectionsLearnAfter,
      onDifference: (section, reason) =>
        logger.warn({ section, reason }, 'section differs from the dossier member; no longer derived'),
      onError: (err) => logger.warn({ err: (err as Error).message }, 'section verdicts unreadable'),
    }),
    cache: new ResponseCache({
      store,
      clock,
      config: resolveCacheConfig(config.cache),
      onError: (err, where) => {
        metrics.storeError('cache');
        logger.warn({ err: (err as Error).message, op: where.op }, 'cache fault; treated as a miss');
      },
    }),
  };
}

type MoneyFault = (err: unknown, what: string) => void;

/**
 * The wallet against the ledger: every /v1/me read keeps a wallet snapshot, and a fall of the
 * vendor's wallet that the ledger did not charge is counted and logged (unattributed spend).
 */
function walletReconciliation(deps: PipelineInputs, metrics: GatewayMetrics, moneyFault: MoneyFault) {
  const { config, store, logger } = deps;
  const walletSnapshots = new WalletSnapshots(store, config.cost.timeZone);
  const spendLedger = new SpendLedger(store);
  // A charge is debited between its call's start and its answer: at most the upstream timeout.
  const walletLagMs = config.upstream.timeoutMs + 5_000;
  const reconcileWallet = async (wallet: { balance_minor: number; as_of: string }) => {
    try {
      const pair = await walletSnapshots.record(wallet);
      if (!pair) return;
      const entries = await spendLedger.read(pair[0].asOf - walletLagMs, pair[1].asOf + 1);
      const [r] = reconcile(pair, entries, walletLagMs);
      if (!r) return;
      if (r.unattributedMinor > 0) {
        metrics.m.walletUnattributed.inc(r.unattributedMinor);
        logger.warn(
          { wallet: { ...r, from: new Date(r.from).toISOString(), to: new Date(r.to).toISOString() } },
          "the vendor's wallet fell by more than the ledger charged: unattributed spend",
        );
      }
      if (r.topUpMinor > 0) metrics.m.walletTopUps.inc(r.topUpMinor);
    } catch (err) {
      moneyFault(err, 'wallet reconciliation failed');
    }
  };
  return { walletSnapshots, spendLedger, walletLagMs, reconcileWallet };
}

/** Budget periods and leases follow the money store's clock (cost/money-clock.ts). */
function moneyClockOf(deps: PipelineInputs, metrics: GatewayMetrics, moneyFault: MoneyFault): MoneyClock {
  const { config, store, clock, logger } = deps;
  let skewWarned = false;
  return new MoneyClock(clock, {
    serverTimeMs:
      config.cost.moneyClock === 'store' && store.serverTimeMs ? () => store.serverTimeMs!() : null,
    onSkew: (skewMs) => {
      metrics.m.clockSkew.set(skewMs / 1000);
      const over = Math.abs(skewMs) > 1_000;
      if (over && !skewWarned)
        logger.warn(
          { skewMs },
          "this replica's clock is off the money store's by more than 1 s (money follows the store's)",
        );
      skewWarned = over;
    },
    onError: (err) => moneyFault(err, 'money clock: could not read the store time'),
  });
}

/** The price table: read from /v1/me, learned from charges and spread to every replica. */
function priceBookOf(
  deps: PipelineInputs,
  upstream: GovernedUpstream,
  metrics: GatewayMetrics,
  reconcileWallet: (wallet: { balance_minor: number; as_of: string }) => Promise<void>,
): PriceBook {
  const { config, store, clock, logger } = deps;
  return new PriceBook({
    // The gateway's own calls spend the key budget too, under the name "_gateway".
    // Not started (the rate queue refused): an error, reported; the next refresh tries again.
    upstream: {
      request: async (req) => sentOrThrow(await upstream.request({ ...req, app: '_gateway', route: 'me' })),
    },
    clock,
    refreshMs: config.cost.pricesRefreshSeconds * 1000,
    timeoutMs: config.upstream.timeoutMs,
    onError: (err) => logger.warn({ err: (err as Error).message }, 'price table refresh failed'),
    // Every /v1/me read keeps a wallet snapshot; the first replica to keep one reconciles the
    // newest settled interval against the ledger (cost/wallet-reconciliation.ts).
    onRefresh: (me) => {
      if (me.wallet) void reconcileWallet(me.wallet);
    },
    onLearn: (learned, spread) => {
      metrics.m.price.set({ kind: learned.kind }, learned.priceMinor);
      if (!spread) return;
      logger.info({ price: learned }, 'price learned from a charge (X-Charged-Minor)');
      // Every replica estimates at the new price from the next call on (bus: a hint; a replica
      // that misses it learns from its own next charge or from /v1/me).
      store
        .publish(PRICES_CHANNEL, JSON.stringify(learned))
        .catch((err: unknown) =>
          logger.warn({ err: (err as Error)?.message }, 'could not spread a learned price'),
        );
    },
  });
}
