// buildServer(): the gateway's fastify instance with every route, hook and error mapping,
// but no listen() — tests and main.ts both use it. Owns nothing it did not create: the
// store, the upstream client and the logger come in as dependencies. This file only puts the
// pieces together, in the order fastify runs their hooks; each piece is a module of src/server/:
//   app.ts                the fastify instance: deadlines, raw bodies, request ids, error answers, drain
//   client-errors.ts      Node's refusals before fastify (bad request line, no Host, CONNECT)
//   request-accounting.ts the log line, request metrics and savings of every answer
//   wiring.ts             every part, built once from the dependencies (pipeline-wiring.ts:
//                         the pipeline's parts)
//   lifecycle.ts          starts the parts when ready, stops them on close
//   reload.ts             the generation in force, and reload
//
// Must never: build a part (wiring.ts does; only the audit trail is made here, as it logs
// through fastify's logger), or read the config per request (a route handler reads the
// generation in force, reload.ts).
import type { FastifyInstance } from 'fastify';
import { registerAdminRoutes } from './admin/admin-routes.ts';
import { registerReplicaRoutes } from './admin/replicas-routes.ts';
import { registerWebhookIngress } from './checks/check-events.ts';
import { registerConsoleRoutes } from './console/console-routes.ts';
import { AuditTrail } from './finance/audit-trail.ts';
import { registerStatementRoutes } from './finance/statement-routes.ts';
import { accessLogger } from './logger.ts';
import { registerHealthRoutes } from './ops/health-routes.ts';
import { metricsListenerHealth, registerMetricsRoutes } from './ops/metrics-routes.ts';
import { makeHitPath } from './pipeline/hit-path.ts';
import { UPSTREAM_ROUTES } from './route-table.ts';
import { createApp } from './server/app.ts';
import { registerLifecycle } from './server/lifecycle.ts';
import { liveGateway, reloadBySignal } from './server/reload.ts';
import { registerAccounting } from './server/request-accounting.ts';
import { type ServerDeps, wireGateway } from './server/wiring.ts';

export { drainGateway } from './server/app.ts';
export { type ReloadResult, reloadGateway } from './server/reload.ts';
export type { ServerDeps } from './server/wiring.ts';

export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const { config, logger } = deps;
  const wiring = wireGateway(deps);
  const { metrics, savings, pipeline, heartbeat, checkEvents, finance } = wiring;
  const { app, closing, answerFirst } = createApp({
    config,
    logger,
    onStoreError: () => metrics.storeError('request'),
  });
  const access = accessLogger(logger, config.log.requests);
  registerAccounting(app, { metrics, savings, access });
  const gateway = liveGateway(wiring, deps.loadConfig);
  const { current } = gateway;

  registerHealthRoutes(app, {
    probes: { store: () => deps.store.ping(), upstream: () => deps.upstream.probe(2_000) },
    now: () => deps.clock.now(),
    draining: closing,
    extra: () => metricsListenerHealth(app),
  });
  registerMetricsRoutes(app, {
    metrics,
    shared: wiring.shared,
    config,
    live: () => current().config,
    now: () => deps.clock.now(),
    onListenError: (err) =>
      logger.error(
        { err: err.message, host: config.metrics.host, port: config.metrics.port },
        'metrics listener could not start; /metrics is not served there (apps are served as usual)',
      ),
  });
  registerWebhookIngress(app, pipeline, checkEvents, wiring.webhookSecrets);
  registerLifecycle(app, wiring);

  const trail = new AuditTrail({ store: finance, clock: deps.clock, logger: app.log });
  reloadBySignal(app, gateway, trail);
  if (config.server.hitPath) {
    const tracing = deps.tracing;
    // The cache-hit path (pipeline/hit-path.ts) sees each request before fastify.
    answerFirst(
      makeHitPath({
        deps: current,
        closing,
        metrics,
        logger,
        access,
        // Tracing on: each fast HIT gets its one SERVER span. Off: the hit path has no hook at all.
        ...(tracing ? { traced: (req, hit) => tracing.hit(req.headers, req.method ?? 'GET', hit) } : {}),
      }),
    );
  }
  registerAdminRoutes(app, current, gateway.reload, {
    webhooks: checkEvents.deliveries,
    finance: {
      trail,
      routes: { store: finance, overrides: pipeline.overrides, bus: deps.store, clock: deps.clock },
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
      handler: (request, reply) => gateway.handlerFor(route)(request, reply),
    });
  }
  return app;
}
