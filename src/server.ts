// buildServer(): the gateway's fastify instance with every route, hook and error mapping,
// but no listen() — tests and main.ts both use it. Owns nothing it did not create: the
// store, the upstream client and the logger come in as dependencies.
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { resolve as resolvePath } from 'node:path';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import { registerAdminRoutes } from './admin/admin-routes.ts';
import { registerReplicaRoutes } from './admin/replicas-routes.ts';
import { ResponseCache, resolveCacheConfig } from './cache/index.ts';
import { SectionVerdicts } from './cache/section-verdicts.ts';
import { createCheckEvents, registerWebhookIngress } from './checks/check-events.ts';
import { CheckTickets } from './checks/check-tickets.ts';
import { type Clock, type Random, systemRandom } from './clock.ts';
import type { GatewayConfig, WebhookSecrets } from './config/schema.ts';
import { registerConsoleRoutes } from './console/console-routes.ts';
import { BudgetGuard } from './cost/budget-guard.ts';
import { ChargeBook } from './cost/charge-book.ts';
import { ChargeGate } from './cost/charge-gate.ts';
import { ChargeOutbox } from './cost/charge-outbox.ts';
import { Coalescer } from './cost/coalescer.ts';
import { MoneyClock } from './cost/money-clock.ts';
import { PRICES_CHANNEL, PriceBook, parseLearnedPrice } from './cost/price-book.ts';
import { Reconciler } from './cost/reconciler.ts';
import { SpendLedger } from './cost/spend-ledger.ts';
import { reconcile } from './cost/wallet-reconciliation.ts';
import { WalletSnapshots } from './cost/wallet-snapshots.ts';
import { WindowTracker } from './cost/window-tracker.ts';
import { ApiError, envelopeCode, sendError } from './errors.ts';
import { AuditTrail, changedConfigKeys } from './finance/audit-trail.ts';
import { BUDGETS_CHANNEL, BudgetOverrides } from './finance/budget-overrides.ts';
import type { FinanceStore } from './finance/finance-store.ts';
import { MemoryFinanceStore } from './finance/memory-finance-store.ts';
import { SavingsRecord } from './finance/savings-record.ts';
import { registerStatementRoutes } from './finance/statement-routes.ts';
import { snakeCaseKeys } from './json-case.ts';
import { RateGovernor } from './limits/index.ts';
import { accessLogger } from './logger.ts';
import { GatewayMetrics } from './metrics/gateway-metrics.ts';
import { UNKNOWN_APP } from './metrics/metric-catalogue.ts';
import { SharedGauges } from './metrics/shared-gauges.ts';
import { SoftLimitNotices } from './metrics/soft-limit-notices.ts';
import { registerHealthRoutes } from './ops/health-routes.ts';
import { metricsListenerHealth, registerMetricsRoutes } from './ops/metrics-routes.ts';
import { ReplicaHeartbeat } from './ops/replica-heartbeat.ts';
import { requestLogLine } from './ops/request-log.ts';
import type { Tracing } from './ops/tracing.ts';
import type { RequestContext } from './pipeline/context.ts';
import type { PipelineDeps } from './pipeline/deps.ts';
import { makeHitPath } from './pipeline/hit-path.ts';
import { makePipeline } from './pipeline/index.ts';
import { STORE_RETRY_AFTER } from './pipeline/refusals.ts';
import { describeCause } from './pipeline/respond.ts';
import { ClientGone } from './pipeline/stages/upstream.ts';
import { UPSTREAM_ROUTES } from './route-table.ts';
import { clientErrorAnswer, refuseConnect, refusedWithoutHost } from './server/client-errors.ts';
import { type Store, StoreUnavailableError } from './store/store.ts';
import { GovernedUpstream } from './upstream/governed-upstream.ts';
import type { UpstreamClient } from './upstream/upstream-client.ts';

export interface ServerDeps {
  config: GatewayConfig;
  upstream: UpstreamClient;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Jitter source (retry backoff); Math.random unless a test injects a seeded one. */
  random?: Random;
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
  /**
   * OpenTelemetry traces (src/ops/tracing.ts; main.ts starts it from OTEL_EXPORTER_OTLP_*).
   * Absent: tracing is off. Present: every /v1 request gets a SERVER span (a fast-path HIT one
   * span, pipeline/hit-path.ts `traced`); the caller flushes and shuts it down after close().
   */
  tracing?: Tracing;
}

/** What a reload applied: the apps now configured, and changed settings that need a restart. */
export interface ReloadResult {
  apps: string[];
  restartNeeded: string[];
}

const reloaders = new WeakMap<FastifyInstance, () => ReloadResult>();
const drainers = new WeakMap<FastifyInstance, () => void>();

/**
 * Starts a drain (SIGTERM, before close()): /readyz answers 503 from now on and every answer
 * carries Connection: close, while requests are still served (server.drainDelayMs in main.ts).
 */
export function drainGateway(app: FastifyInstance): void {
  drainers.get(app)?.();
}

/**
 * Reloads a gateway built by buildServer: re-reads the config, validates and builds everything
 * it needs, then swaps (see docs/architecture.md "Reload"). Throws ConfigError (every problem)
 * or RangeError and keeps the running config.
 */
export function reloadGateway(app: FastifyInstance): ReloadResult {
  const reload = reloaders.get(app);
  if (!reload) throw new Error('this gateway was built without a config loader; it cannot reload');
  return reload();
}

export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const { config } = deps;
  // The cache-hit path (pipeline/hit-path.ts) sees each request before fastify; set once the
  // pipeline exists, below.
  const httpOptions = {
    connectionsCheckingInterval: Math.min(5_000, Math.ceil(config.server.requestTimeoutMs / 4)),
    // Node would answer a request without Host with a bare 400 (no envelope, no X-Request-Id);
    // the factory below answers it in the envelope instead.
    requireHostHeader: false,
  };
  let hitPath: ((req: IncomingMessage, res: ServerResponse) => boolean) | null = null;
  const app = Fastify({
    serverFactory: (handler) => {
      const server = createHttpServer(httpOptions, (req, res) => {
        if (refusedWithoutHost(req)) return;
        if (hitPath?.(req, res)) return;
        handler(req, res);
      });
      server.on('connect', refuseConnect);
      // What fastify sets on a server it makes itself (lib/server.js getServerInstance).
      server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
      server.requestTimeout = config.server.requestTimeoutMs;
      server.setTimeout(0);
      return server;
    },
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One log line per request is written by the onResponse hook below, not by fastify.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.server.bodyLimitBytes,
    trustProxy: config.server.trustProxy,
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A slow sender cannot hold a connection: headers and the whole request have deadlines.
    requestTimeout: config.server.requestTimeoutMs,
    // Node looks for requests past their timeout this often (its default, 30 s, would let a slow
    // sender overstay a short timeout by that much).
    http: httpOptions,
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    // Node's own refusals (bad request line, headers too large, request timeout) in the
    // upstream's envelope with an X-Request-Id, never Node's bare text.
    clientErrorHandler: clientErrorAnswer,
    // fastify's refusals before routing (a malformed path such as /v1/banks/%FF).
    frameworkErrors: (err, request, rawReply) => {
      const refusal = new ApiError(
        'validation_failed',
        { fields: [{ field: 'path', code: 'invalid', message: err.message }] },
        undefined,
        { status: 400 },
      );
      sendError(
        (rawReply as unknown as FastifyReply).header('x-request-id', request.id),
        refusal,
        request.id,
      );
    },
  });
  app.server.headersTimeout = Math.min(config.server.headersTimeoutMs, config.server.requestTimeoutMs);

  // Bodies are kept raw: validation parses JSON itself so a bad body is a 422 in the
  // upstream's envelope, and the exact bytes go upstream.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // Graceful shutdown: once close() begins, every answer (including those already in
  // flight) tells the client to drop the connection, so close() is not held up by
  // keep-alive sockets that were busy when it started.
  let closing = false;
  drainers.set(app, () => {
    closing = true;
  });
  let idleSweep: ReturnType<typeof setInterval> | null = null;
  app.addHook('preClose', async () => {
    closing = true;
    // fastify closes the connections idle when close() starts; one that turns idle a moment
    // later would otherwise hold close() for the whole keep-alive timeout (72 s by default).
    idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
    idleSweep.unref();
  });
  app.addHook('onClose', async () => {
    if (idleSweep) clearInterval(idleSweep);
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // One field-name case for every JSON object the gateway writes itself (json-case.ts): admin
  // answers, the console's session, refusal envelopes. /v1 answers are bytes and never pass here.
  app.addHook('preSerialization', async (request, _reply, payload) =>
    request.routeOptions.config?.jsonKeys === 'verbatim' ? payload : snakeCaseKeys(payload),
  );
  app.addHook('onSend', async (request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    // An upstream error passed through unchanged: its code for the log line and metrics.
    const ctx = request.ctx;
    if (ctx && !ctx.errorCode && reply.statusCode >= 400)
      ctx.errorCode =
        typeof payload === 'string' || Buffer.isBuffer(payload) ? envelopeCode(payload) : undefined;
    return payload;
  });

  const metrics = new GatewayMetrics({
    apps: config.apps.map((a) => a.name),
    price: (kind) => pipelineDeps.prices.price(kind),
    defaultMetrics: config.metrics.processMetrics,
  });
  metrics.m.walletLowBalanceHorizon.set(config.finance.lowBalanceDays * 86_400);
  const savings = new SavingsRecord({
    store: deps.store,
    clock: deps.clock,
    timeZone: () => live.deps.config.cost.timeZone,
    logger: deps.logger,
  });
  metrics.savings = savings;
  const routeByUrl = new Map(UPSTREAM_ROUTES.map((r) => [`${r.method} ${r.url}`, r.name]));

  const access = accessLogger(deps.logger, config.log.requests);
  app.addHook('onResponse', async (request, reply) => {
    const ctx = request.ctx;
    const refusal = ctx?.refusal;
    if (refusal) noteRefusal(ctx, refusal);
    const upstreamId = reply.getHeader('x-upstream-request-id');
    if (ctx && typeof upstreamId === 'string') ctx.upstreamRequestId = upstreamId;
    // A cache answer saves what the same read straight from the upstream would cost now.
    if (ctx && (ctx.cache === 'HIT' || ctx.cache === 'STALE') && reply.statusCode === 200)
      metrics.saved(ctx, 'cache', metrics.directCost(ctx, ctx.windowCovered ?? false));
    // Served requests per app and day, and how many without paying (kept on record: statements).
    if (ctx?.app && reply.statusCode < 400) savings.served(ctx.app.name, (ctx.chargedMinor ?? 0) > 0);
    const line = requestLogLine(request, reply);
    access.info({ reqId: request.id, ...line }, 'request');
    const route = ctx?.route.name ?? routeByUrl.get(`${request.method} ${request.routeOptions.url}`);
    if (route === undefined && !request.url.startsWith('/v1/')) return;
    const appName = ctx?.app?.name ? metrics.app(ctx.app.name) : UNKNOWN_APP;
    metrics.request({
      app: appName,
      route: route ?? 'other',
      status: reply.statusCode,
      cache: ctx?.cache ?? '',
      seconds: reply.elapsedTime / 1000,
      queuedMs: ctx?.queuedMs,
    });
    if (line.error) metrics.error(appName, route ?? 'other', line.error);
    const { limit, reason } = (refusal?.details ?? {}) as { limit?: unknown; reason?: unknown };
    if (refusal?.code === 'rate_limited' && typeof limit === 'string' && typeof reason === 'string')
      metrics.rateLimited(appName, limit, reason);
  });

  app.setErrorHandler((err: FastifyError | ApiError | Error, request, reply) => {
    if (err instanceof ClientGone) return reply.code(499).send();
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else if (err instanceof StoreUnavailableError) {
      apiError = new ApiError('store_unavailable', {}, undefined, {
        cause: err,
        headers: { ...STORE_RETRY_AFTER },
      });
    } else if ('statusCode' in err && typeof err.statusCode === 'number' && err.statusCode < 500) {
      // fastify's own refusals (body too large, bad content type): a bad input, never a 500.
      apiError = ApiError.validation([
        { field: 'body', code: (err as FastifyError).code ?? 'invalid', message: err.message },
      ]);
    } else {
      request.log.error({ err }, 'unhandled error');
      apiError = new ApiError('internal_error');
    }
    if (err instanceof StoreUnavailableError) metrics.storeError('request');
    noteRefusal(request.ctx, apiError);
    if (apiError.status >= 500)
      request.log.warn({ code: apiError.code, cause: describeCause(apiError.cause) }, 'refused');
    return sendError(reply, apiError);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new ApiError('not_found', {}, `No such endpoint: ${request.method} ${request.url.split('?')[0]}`),
    ),
  );

  registerHealthRoutes(app, {
    probes: { store: () => deps.store.ping(), upstream: () => deps.upstream.probe(2_000) },
    now: () => deps.clock.now(),
    draining: () => closing,
    extra: () => metricsListenerHealth(app),
  });

  const finance = deps.finance ?? new MemoryFinanceStore();
  if (!deps.finance && deps.store.kind === 'redis')
    deps.logger.warn(
      'no shared finance store given: budget overrides and the audit trail stay in this process',
    );
  const pipelineDeps = buildPipelineDeps(deps, metrics, finance);
  // This replica's heartbeat (GET /admin/replicas) and cpgw_config_info{hash}: a reload updates both.
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
  registerMetricsRoutes(app, {
    metrics,
    shared: new SharedGauges({
      metrics,
      sources: {
        // The guard in force now (a reload swaps it), so the gauges show today's caps.
        budgets: { status: (app) => pipelineDeps.policy.budgets.status(app) },
        governor: pipelineDeps.upstream.governor,
        windows: pipelineDeps.windows,
        prices: pipelineDeps.prices,
        cache: pipelineDeps.cache,
        backlog: async () => {
          const pending = await deps.store.pendingCharges(1);
          return { pendingOldestAt: pending[0]?.at ?? null, outboxEntries: pipelineDeps.outbox.depth };
        },
      },
      // The apps of the configuration in force: an app added by a reload gets its series.
      apps: () => pipelineDeps.policy.config.apps.map((a) => a.name),
      clock: deps.clock,
      timeZone: config.cost.timeZone,
      timeoutMs: config.metrics.sharedReadTimeoutMs,
      minIntervalMs: config.metrics.sharedReadMinIntervalMs,
      windowsScanLimit: config.metrics.windowsScanLimit,
    }),
    config,
    live: () => live.deps.config,
    now: () => deps.clock.now(),
    onListenError: (err) =>
      deps.logger.error(
        { err: err.message, host: config.metrics.host, port: config.metrics.port },
        'metrics listener could not start; /metrics is not served there (apps are served as usual)',
      ),
  });
  const webhookSecrets = deps.webhookSecrets ?? { upstream: [], apps: {} };
  const checkEvents = createCheckEvents(pipelineDeps, webhookSecrets, randomUUID());
  registerWebhookIngress(app, pipelineDeps, checkEvents, webhookSecrets);
  let unsubscribePrices: (() => Promise<void>) | null = null;
  let unsubscribeBudgets: (() => Promise<void>) | null = null;
  app.addHook('onReady', async () => {
    await pipelineDeps.moneyClock.start();
    // A budget change on any replica is announced here; the reserve path checks the version too.
    unsubscribeBudgets = await deps.store
      .subscribe(BUDGETS_CHANNEL, () => void pipelineDeps.overrides.invalidate())
      .catch((err: unknown) => {
        deps.logger.warn(
          { err: (err as Error)?.message },
          'budget changes not subscribed; the version check still applies',
        );
        return null;
      });
    await pipelineDeps.overrides.fresh();
    unsubscribePrices = await deps.store
      .subscribe(PRICES_CHANNEL, (message) => {
        const learned = parseLearnedPrice(message);
        if (learned) pipelineDeps.prices.learn(learned, false);
      })
      .catch((err: unknown) => {
        deps.logger.warn({ err: (err as Error)?.message }, 'cannot hear prices learned by other replicas');
        return null;
      });
    await pipelineDeps.prices.start();
    await checkEvents.start();
    const replayed = await pipelineDeps.outbox.loadSaved();
    if (replayed > 0)
      deps.logger.warn({ operations: replayed }, 'replaying money operations a previous run left');
    pipelineDeps.reconciler.start();
    await heartbeat.start();
    savings.start();
  });
  app.addHook('onClose', async () => {
    await heartbeat.stop();
    pipelineDeps.moneyClock.stop();
    await unsubscribeBudgets?.().catch(() => {});
    pipelineDeps.prices.stop();
    await unsubscribePrices?.().catch(() => undefined);
    await checkEvents.close();
    await pipelineDeps.coalescer.idle();
    await pipelineDeps.coalescer.close();
    await pipelineDeps.cache.packed();
    await pipelineDeps.reconciler.close();
    // After in-flight requests: anyone still queued is refused (reason "shutdown").
    await pipelineDeps.upstream.governor.close();
    // Money operations still waiting for the store: flushed, or kept in the state directory.
    const left = await pipelineDeps.outbox.close(Math.min(5_000, config.server.shutdownGraceMs));
    if (!left.flushed)
      deps.logger.error(
        { savedTo: left.savedTo },
        'store unreachable at shutdown; money operations kept for the next start',
      );
    await savings.close();
    if (!deps.finance) await finance.close();
  });
  // The reload seam: one generation (config + what is derived from it alone) read once per
  // request; a reload builds and checks the next, then swaps it in one assignment.
  let live = generation(pipelineDeps);
  const current = () => live.deps;
  const reload = (): ReloadResult => {
    if (!deps.loadConfig) throw new Error('this gateway was built without a config loader');
    const next = deps.loadConfig();
    const nextDeps = reconfigured(live.deps, next, pipelineDeps);
    // Everything below was checked (schema, governor limits) before anything changes.
    const { expectedReplicas: _replicas, ...classes } = next.limits;
    pipelineDeps.upstream.governor.reconfigure({ classes, apps: governorApps(next) });
    pipelineDeps.cache.reconfigure(resolveCacheConfig(next.cache));
    metrics.addApps(next.apps.map((a) => a.name));
    metrics.m.walletLowBalanceHorizon.set(next.finance.lowBalanceDays * 86_400);
    live = generation(nextDeps);
    pipelineDeps.policy.config = next;
    pipelineDeps.policy.budgets = nextDeps.budgets;
    const previousHash = heartbeat.hash;
    void heartbeat.setConfig(next);
    if (heartbeat.hash !== previousHash) {
      metrics.m.configInfo.remove({ hash: previousHash });
      metrics.m.configInfo.set({ hash: heartbeat.hash }, 1);
    }
    return { apps: next.apps.map((a) => a.name), restartNeeded: restartNeeded(config, next) };
  };
  const trail = new AuditTrail({ store: finance, clock: deps.clock, logger: app.log });
  // A reload by signal (SIGHUP) is recorded too, with the changed keys and "SIGHUP" as the actor.
  reloaders.set(app, () => {
    const before = live.deps.config;
    const result = reload();
    void trail.append(
      trail.entry(
        { name: 'SIGHUP', role: 'admin' },
        { id: randomUUID(), ip: 'local', headers: {} },
        {
          action: 'reload',
          target: 'config',
          before: null,
          after: {
            changed_keys: changedConfigKeys(before, live.deps.config),
            apps: result.apps,
            restart_needed: result.restartNeeded,
          },
        },
      ),
    );
    return result;
  });
  if (config.server.hitPath) {
    const tracing = deps.tracing;
    hitPath = makeHitPath({
      deps: current,
      closing: () => closing,
      metrics,
      logger: deps.logger,
      access,
      // Tracing on: each fast HIT gets its one SERVER span. Off: the hit path has no hook at all.
      ...(tracing ? { traced: (req, hit) => tracing.hit(req.headers, req.method ?? 'GET', hit) } : {}),
    });
  }
  registerAdminRoutes(app, current, reload, {
    webhooks: checkEvents.deliveries,
    finance: {
      trail,
      routes: { store: finance, overrides: pipelineDeps.overrides, bus: deps.store, clock: deps.clock },
    },
  });
  registerStatementRoutes(app, { current, finance, savings });
  // The web console at /console/ over the admin API (404 while no admin token is configured).
  registerConsoleRoutes(app, current, deps.clock);
  registerReplicaRoutes(app, { current, heartbeat });
  for (const route of UPSTREAM_ROUTES) {
    app.route({
      method: route.method,
      url: route.url,
      handler: (request, reply) => live.handlerFor(route)(request, reply),
    });
  }
  return app;
}

/** One configuration's pipeline: its deps and a handler per route (built on first use). */
function generation(deps: PipelineDeps) {
  const make = makePipeline(deps);
  const handlers = new Map<string, ReturnType<typeof make>>();
  return {
    deps,
    handlerFor(route: (typeof UPSTREAM_ROUTES)[number]) {
      let handler = handlers.get(route.name);
      if (!handler) {
        handler = make(route);
        handlers.set(route.name, handler);
      }
      return handler;
    },
  };
}

/**
 * The deps of the next generation: the same stateful parts (store, governor, money, cache, prices)
 * with the new config and the budget guard built from it. Throws before anything is swapped.
 */
function reconfigured(
  prev: PipelineDeps,
  next: GatewayConfig,
  base: {
    notices: SoftLimitNotices;
    chargesFor: (guard: BudgetGuard) => ChargeBook;
    overrides: BudgetOverrides;
  },
): PipelineDeps {
  // The governor checks app limits again when applied; check them here so a bad one stops the
  // reload before any part is swapped.
  for (const a of next.apps)
    if (!(a.limits.weight > 0)) throw new RangeError(`apps.${a.name}.limits.weight must be > 0`);
  const budgets = budgetGuard(
    { config: next, store: prev.store, clock: prev.moneyClock },
    base.notices,
    base.overrides,
  );
  return { ...prev, config: next, budgets, charges: base.chargesFor(budgets) };
}

/** Settings of those sections that each request reads from the live config (the /metrics door). */
const APPLIED_LIVE = new Set(['metrics.onMainPort', 'metrics.tokenHash']);

/** Settings a reload does not apply (listener, store, upstream, money timing): named so the operator restarts. */
function restartNeeded(running: GatewayConfig, next: GatewayConfig): string[] {
  const sections = ['server', 'upstream', 'store', 'log', 'cost', 'metrics', 'notices'] as const;
  const out: string[] = [];
  for (const section of sections) {
    const a = running[section] as Record<string, unknown>;
    const b = next[section] as Record<string, unknown>;
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
      if (JSON.stringify(a[key]) !== JSON.stringify(b[key]) && !APPLIED_LIVE.has(`${section}.${key}`))
        out.push(`${section}.${key}`);
  }
  if (next.limits.expectedReplicas !== running.limits.expectedReplicas) out.push('limits.expectedReplicas');
  return out;
}

function governorApps(config: GatewayConfig) {
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
interface LivePolicy {
  config: GatewayConfig;
  budgets: BudgetGuard;
}

/** Budget caps of one configuration (rebuilt on reload: caps are config, counters are in the store). */
function budgetGuard(
  deps: Pick<ServerDeps, 'config' | 'store' | 'clock'>,
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
function governedUpstream(deps: ServerDeps, metrics: GatewayMetrics): GovernedUpstream {
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

function buildPipelineDeps(
  deps: ServerDeps,
  metrics: GatewayMetrics,
  finance: FinanceStore,
): PipelineDeps & {
  policy: LivePolicy;
  notices: SoftLimitNotices;
  chargesFor: (guard: BudgetGuard) => ChargeBook;
  overrides: BudgetOverrides;
} {
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
  // Budget periods and leases follow the money store's clock (cost/money-clock.ts).
  let skewWarned = false;
  const moneyClock = new MoneyClock(clock, {
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
    prices: new PriceBook({
      // The gateway's own calls spend the key budget too, under the name "_gateway".
      upstream: { request: (req) => upstream.request({ ...req, app: '_gateway', route: 'me' }) },
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
    }),
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

/** A gateway refusal (a stage's value or a thrown error): its code and reason for the log line. */
function noteRefusal(
  ctx: RequestContext | undefined,
  err: { code: string; details: Record<string, unknown> },
): void {
  if (!ctx) return;
  const details = err.details as { reason?: unknown; limit?: unknown; scope?: unknown; period?: unknown };
  ctx.errorCode = err.code;
  if (err.code === 'budget_exceeded')
    ctx.refusalReason = `${String(details.scope)}_${String(details.period)}`;
  else if (typeof details.reason === 'string')
    ctx.refusalReason =
      typeof details.limit === 'string' ? `${details.limit}_${details.reason}` : details.reason;
}
