// createEmulator(): builds the emulator's state, its fastify server (upstream routes plus
// the /_emulator/ control API) and listens. Owns the request lifecycle hooks that stand on
// every answer (X-Request-Id, error envelope, 404 for unknown paths, malformed URLs answered
// with the envelope instead of fastify's own 400, the request log).
// It never reads Date.now() for billing, windows or limits: the injected OffsetClock rules.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { OffsetClock, seededRandom, systemClock } from '../clock.ts';
import { ApiError, sendError } from '../errors.ts';
import { BillingLedger } from './billing-ledger.ts';
import { CheckRegistry } from './check-registry.ts';
import { registerCheckRoutes } from './check-routes.ts';
import { ClockScheduler } from './clock-scheduler.ts';
import { registerCompanyRoutes } from './company-routes.ts';
import { registerControlRoutes } from './control-routes.ts';
import { CoverageWindows } from './coverage-windows.ts';
import type { EmulatorDataSource } from './data-source.ts';
import { type EmulatorOptions, type ResolvedConfig, resolveConfig } from './emulator-config.ts';
import type { EmulatorContext } from './emulator-context.ts';
import { EmulatorModes } from './emulator-modes.ts';
import { FaultInjector } from './fault-injector.ts';
import { IdempotencyStore } from './idempotency-store.ts';
import { KeyRegistry } from './key-registry.ts';
import { registerLookupRoutes } from './lookup-routes.ts';
import { buildOpenApiDocument } from './openapi-document.ts';
import { RateLimiter } from './rate-limiter.ts';
import { RequestLog } from './request-log.ts';
import { logEntry, toApiError } from './route-pipeline.ts';
import { WebhookDispatcher } from './webhook-dispatcher.ts';

export type { EmulatorOptions } from './emulator-config.ts';

export interface Emulator {
  /** `http://host:port`, no trailing slash. */
  url: string;
  port: number;
  host: string;
  /** The emulator clock; prefer advanceClock() so due timers fire at once. */
  clock: OffsetClock;
  config: ResolvedConfig;
  /** Moves the emulator clock forward and fires everything that became due. */
  advanceClock(ms: number): void;
  /** Back to the start state (ledger, windows, idempotency, limits, log, faults, wallet, prices, checks). */
  reset(): void;
  /** In-process access to the state (ledger, windows, ...) for tests and the gateway's demo mode. */
  context: EmulatorContext;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** FNV-1a 32 of the seed: the latency draws' seed. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

async function defaultData(seed: string): Promise<EmulatorDataSource> {
  const { createEmulatorData } = await import('./data/index.ts');
  return createEmulatorData({ seed });
}

export async function createEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const config = resolveConfig(options);
  const clock = options.clock ?? new OffsetClock();
  const data = options.data ?? (await defaultData(config.seed));
  data.warm?.();
  const scheduler = new ClockScheduler(clock);
  const modes = new EmulatorModes(config.modes, clock, options.random ?? seededRandom(fnv1a(config.seed)));
  const realClock = options.realClock ?? systemClock;
  const windows = new CoverageWindows(clock, config.windowMs);
  const webhooks = new WebhookDispatcher(clock, scheduler, {
    url: config.webhookUrl,
    secrets: config.webhookSecrets,
    timeoutMs: config.webhookTimeoutMs,
    retryDelaysMs: config.webhookRetryDelaysMs,
    signingClock: () => (modes.current.webhookClock === 'real' ? realClock : clock),
  });
  const ctx: EmulatorContext = {
    config,
    modes,
    clock,
    scheduler,
    data,
    keys: new KeyRegistry(config.keys),
    billing: new BillingLedger(
      clock,
      config.prices,
      config.walletMinor,
      config.priceLagMs,
      config.walletLagMs,
    ),
    windows,
    idempotency: new IdempotencyStore(clock),
    limiter: new RateLimiter(clock, config.limits),
    faults: new FaultInjector(),
    requests: new RequestLog(),
    checks: new CheckRegistry(clock, scheduler, data, windows, webhooks, {
      checkMs: config.checkMs,
      checkWaitMs: config.checkWaitMs,
      freshMs: config.freshMs,
      requisitesWindow: () => modes.current.requisitesCheckWindow,
    }),
    webhooks,
  };

  const app = Fastify({
    logger: config.logger,
    genReqId: () => `req_${randomUUID().replaceAll('-', '')}`,
    requestIdHeader: false,
    forceCloseConnections: true,
    bodyLimit: 1024 * 1024,
    exposeHeadRoutes: false,
    // A URL the router cannot decode (`/v1/banks/%FF`) or a too long parameter: answered like
    // every other refusal (envelope, X-Request-Id, 401 first), never fastify's own 400/414.
    frameworkErrors: (error, req, reply) => {
      req.emulatorAt = clock.now();
      reply.header('x-request-id', req.id);
      const key = ctx.keys.authenticate(req.headers.authorization, clock.now());
      req.emulatorKey = key;
      const apiError = key
        ? ApiError.validation([{ field: 'path', code: 'invalid_encoding', message: error.message }])
        : new ApiError('unauthorized');
      if (req.url.startsWith('/v1/')) ctx.requests.record(logEntry(req, 'unknown', apiError.status));
      sendError(reply, apiError);
    },
  });
  app.decorateRequest('emulatorAt', 0);
  app.decorateRequest('emulatorKey', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.addHook('onRequest', (req, reply, done) => {
    req.emulatorAt = clock.now();
    reply.header('x-request-id', req.id);
    done();
  });
  app.addHook('onResponse', (req, reply, done) => {
    if (req.url.startsWith('/v1/')) {
      ctx.requests.record(logEntry(req, req.routeOptions.config?.routeId ?? 'unknown', reply.statusCode));
    }
    done();
  });
  app.setErrorHandler((error, req, reply) => {
    const apiError = toApiError(error);
    if (apiError.status >= 500 && apiError.code === 'internal_error') {
      req.log.error({ err: error }, 'emulator internal error');
      if (!config.logger) console.error('emulator internal error', error);
    }
    return sendError(reply, apiError);
  });
  app.setNotFoundHandler((_req, reply) => sendError(reply, new ApiError('not_found')));

  let openApiJson: string | null = null;
  let baseUrl = '';
  app.get('/v1/openapi.json', { config: { routeId: 'openapi' } }, async (_req, reply) => {
    openApiJson ??= JSON.stringify(buildOpenApiDocument(baseUrl));
    return reply.type('application/json; charset=utf-8').send(openApiJson);
  });
  registerLookupRoutes(app, ctx);
  registerCompanyRoutes(app, ctx);
  registerCheckRoutes(app, ctx);

  const advanceClock = (ms: number): void => {
    clock.advance(ms);
    scheduler.poke();
  };
  const reset = (): void => {
    modes.restart();
    ctx.billing.reset();
    ctx.windows.reset();
    ctx.idempotency.reset();
    ctx.limiter.reset();
    ctx.requests.reset();
    ctx.faults.reset();
    ctx.checks.reset();
    ctx.webhooks.reset();
  };
  registerControlRoutes(app, ctx, { advanceClock, reset });

  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${hostPart}:${address.port}`;
  baseUrl = config.baseUrl ?? url;
  ctx.checks.setBaseUrl(baseUrl);

  return {
    url,
    port: address.port,
    host: address.address,
    clock,
    config,
    advanceClock,
    reset,
    context: ctx,
    app,
    close: async () => {
      scheduler.close();
      webhooks.close();
      await app.close();
    },
  };
}
