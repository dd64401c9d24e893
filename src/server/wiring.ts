// The wiring: every part the gateway is made of, built once from the server's dependencies and
// the configuration at start: metrics and the savings record, the finance store, the pipeline's
// parts (pipeline-wiring.ts), the replica heartbeat, the shared gauges and the check events.
// lifecycle.ts starts and stops them; reload.ts builds the next generation on top of them.
//
// Must never: start anything (no timer, no subscription, no I/O: lifecycle.ts does that once the
// server is ready), or read the config at request time (parts that follow a reload read the
// pipeline's `policy`, which reload.ts swaps).
import { randomUUID } from 'node:crypto';
import { type CheckEvents, createCheckEvents } from '../checks/check-events.ts';
import type { GatewayConfig, WebhookSecrets } from '../config/schema.ts';
import type { FinanceStore } from '../finance/finance-store.ts';
import { MemoryFinanceStore } from '../finance/memory-finance-store.ts';
import { SavingsRecord } from '../finance/savings-record.ts';
import { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import { SharedGauges } from '../metrics/shared-gauges.ts';
import { ReplicaHeartbeat } from '../ops/replica-heartbeat.ts';
import { type PipelineInputs, type WiredPipeline, wirePipeline } from './pipeline-wiring.ts';

/** What buildServer is given: the pipeline's inputs, and what the gateway around it needs. */
export interface ServerDeps extends PipelineInputs {
  /** From the environment only (config/load.ts); none: the webhook ingress refuses every event. */
  webhookSecrets?: WebhookSecrets;
  /**
   * Re-reads the configuration (files and environment) for a reload (SIGHUP, POST /admin/reload);
   * throws ConfigError listing every problem. Absent: the gateway cannot reload.
   */
  loadConfig?: () => GatewayConfig;
  /**
   * Budget overrides and the audit trail (src/finance/). Replicas on a shared store need a shared
   * one (createFinanceStore with the store's settings; main.ts does). Absent: one in this process,
   * closed with the server.
   */
  finance?: FinanceStore;
}

/** Everything buildServer registers routes over and lifecycle.ts starts and stops. */
export interface Wiring {
  metrics: GatewayMetrics;
  savings: SavingsRecord;
  pipeline: WiredPipeline;
  /** This replica's heartbeat (GET /admin/replicas) and cpgw_config_info{hash}: a reload updates both. */
  heartbeat: ReplicaHeartbeat;
  /** The gauges read from the shared store at each /metrics render. */
  shared: SharedGauges;
  checkEvents: CheckEvents;
  webhookSecrets: WebhookSecrets;
  finance: FinanceStore;
  /** The finance store was made here (none given): it closes with the server. */
  ownsFinance: boolean;
}

/** Builds every part, once; nothing of it runs before lifecycle.ts starts it. */
export function wireGateway(deps: ServerDeps): Wiring {
  const { config } = deps;
  const metrics = new GatewayMetrics({
    apps: config.apps.map((a) => a.name),
    price: (kind) => pipeline.prices.price(kind),
    defaultMetrics: config.metrics.processMetrics,
  });
  metrics.m.walletLowBalanceHorizon.set(config.finance.lowBalanceDays * 86_400);
  const savings = new SavingsRecord({
    store: deps.store,
    clock: deps.clock,
    // The configuration in force (a reload may change the time zone of the days it counts).
    timeZone: () => pipeline.policy.config.cost.timeZone,
    logger: deps.logger,
  });
  metrics.savings = savings;

  const finance = deps.finance ?? new MemoryFinanceStore();
  if (!deps.finance && deps.store.kind === 'redis')
    deps.logger.warn(
      'no shared finance store given: budget overrides and the audit trail stay in this process',
    );
  const pipeline = wirePipeline(deps, metrics, finance);
  const heartbeat = new ReplicaHeartbeat({
    store: deps.store,
    clock: deps.clock,
    config,
    onError: (err) =>
      deps.logger.warn(
        { err: (err as Error)?.message },
        'replica heartbeat not written; retrying every 10 s',
      ),
    onRecovered: () => deps.logger.info('replica heartbeat written again'),
  });
  metrics.m.configInfo.set({ hash: heartbeat.hash }, 1);
  const shared = new SharedGauges({
    metrics,
    sources: {
      // The guard in force now (a reload swaps it), so the gauges show today's caps.
      budgets: { status: (app) => pipeline.policy.budgets.status(app) },
      governor: pipeline.upstream.governor,
      windows: pipeline.windows,
      prices: pipeline.prices,
      cache: pipeline.cache,
      backlog: async () => {
        const pending = await deps.store.pendingCharges(1);
        return { pendingOldestAt: pending[0]?.at ?? null, outboxEntries: pipeline.outbox.depth };
      },
    },
    // The apps of the configuration in force: an app added by a reload gets its series.
    apps: () => pipeline.policy.config.apps.map((a) => a.name),
    clock: deps.clock,
    timeZone: config.cost.timeZone,
    timeoutMs: config.metrics.sharedReadTimeoutMs,
    minIntervalMs: config.metrics.sharedReadMinIntervalMs,
    windowsScanLimit: config.metrics.windowsScanLimit,
  });
  const webhookSecrets = deps.webhookSecrets ?? { upstream: [], apps: {} };
  const checkEvents = createCheckEvents(pipeline, webhookSecrets, randomUUID(), () => pipeline.policy.config);
  return {
    metrics,
    savings,
    pipeline,
    heartbeat,
    shared,
    checkEvents,
    webhookSecrets,
    finance,
    ownsFinance: !deps.finance,
  };
}
