// What every answer leaves behind, written by fastify's onSend and onResponse hooks: the one
// access log line (ops/request-log.ts decides its fields), the request metrics (route, app,
// status, cache, queue time, error code, rate refusals), the money a cache answer saved and the
// app's served count for the day (savings record). The cache-hit path writes the same for the
// answers it gives (pipeline/hit-path.ts).
//
// Must never: change an answer, or count a request that is neither a /v1 path nor a known route
// (scans of unknown paths would make a metric series each).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { envelopeCode } from '../errors.ts';
import type { SavingsRecord } from '../finance/savings-record.ts';
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import { UNKNOWN_APP } from '../metrics/metric-catalogue.ts';
import { requestLogLine, writeRequestLog } from '../ops/request-log.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { routeOfPattern } from '../route-match.ts';

export interface AccountingOptions {
  metrics: GatewayMetrics;
  savings: SavingsRecord;
  /** The access logger (logger.ts accessLogger): silent when request logging is off. */
  access: Logger;
}

export function registerAccounting(app: FastifyInstance, o: AccountingOptions): void {
  const { metrics, savings, access } = o;
  // Callback-style hooks (no promise per request; app.ts says why).
  app.addHook('onSend', (request, reply, payload, done) => {
    // An upstream error passed through unchanged: its code for the log line and metrics.
    const ctx = request.ctx;
    if (ctx && !ctx.errorCode && reply.statusCode >= 400)
      ctx.errorCode =
        typeof payload === 'string' || Buffer.isBuffer(payload) ? envelopeCode(payload) : undefined;
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    account(request, reply);
    done();
  });
  function account(request: FastifyRequest, reply: FastifyReply): void {
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
    writeRequestLog(access, request.id, line);
    const route = ctx?.route.name ?? routeOfPattern(request.method, request.routeOptions.url);
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
  }
}

/** A gateway refusal (a stage's value or a thrown error): its code and reason for the log line. */
export function noteRefusal(
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
