// The one log line per answer, built and written here for both writers: the server's onResponse
// hook (server/request-accounting.ts) and the cache-hit path (pipeline/hit-path.ts): who asked
// what, how it was answered and what it cost. Fields: app, route, method, status, error (envelope code),
// reason (why a 402/429/5xx refusal), cache (X-Cache), charged, saved and savedReason (README
// "Savings"), upstreamRequestId, queuedMs, durationMs, upstreamMs, attempts.
// Must never log the INN, a token, a header value other than the upstream's request id, or a body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { RequestContext } from '../pipeline/context.ts';

/** What of a request's context the log line reads (the hit path has these and no more). */
export type LoggedContext = Pick<RequestContext, 'route' | 'app'> &
  Pick<
    RequestContext,
    | 'errorCode'
    | 'refusalReason'
    | 'cache'
    | 'chargedMinor'
    | 'savedMinor'
    | 'savedReason'
    | 'upstreamRequestId'
    | 'queuedMs'
    | 'upstreamMs'
    | 'upstreamAttempts'
  >;

/** The facts of the exchange itself, beside the context. */
export interface ExchangeFacts {
  /** The route pattern, when no context names the route. */
  route: string | null;
  method: string;
  status: number;
  elapsedMs: number;
  clientGone: boolean;
}

export interface RequestLogLine {
  app: string | null;
  route: string | null;
  method: string;
  status: number;
  error?: string | undefined;
  reason?: string | undefined;
  cache: string | null;
  charged: number;
  saved?: number | undefined;
  savedReason?: string | undefined;
  upstreamRequestId?: string | undefined;
  queuedMs?: number | undefined;
  durationMs: number;
  upstreamMs?: number | undefined;
  attempts?: number | undefined;
  clientGone?: true | undefined;
}

const round2 = (ms: number) => Math.round(ms * 100) / 100;

export function requestLogLine(request: FastifyRequest, reply: FastifyReply): RequestLogLine {
  return logLineOf(request.ctx, {
    route: request.routeOptions.url ?? null,
    method: request.method,
    status: reply.statusCode,
    elapsedMs: reply.elapsedTime,
    clientGone: request.raw.destroyed && !reply.raw.writableFinished,
  });
}

/** The log line of one answer from its context and the facts of the exchange (the hit path writes it too). */
export function logLineOf(ctx: LoggedContext | undefined, facts: ExchangeFacts): RequestLogLine {
  return {
    app: ctx?.app?.name ?? null,
    route: ctx?.route.name ?? facts.route,
    method: facts.method,
    status: facts.status,
    error: ctx?.errorCode,
    reason: ctx?.refusalReason,
    cache: ctx?.cache ?? null,
    charged: ctx?.chargedMinor ?? 0,
    saved: ctx?.savedMinor,
    savedReason: ctx?.savedReason,
    upstreamRequestId: ctx?.upstreamRequestId,
    queuedMs: ctx?.queuedMs !== undefined ? Math.round(ctx.queuedMs) : undefined,
    durationMs: round2(facts.elapsedMs),
    upstreamMs: ctx?.upstreamMs !== undefined ? round2(ctx.upstreamMs) : undefined,
    attempts: ctx?.upstreamAttempts,
    clientGone: facts.clientGone ? true : undefined,
  };
}

/** Writes one answer's log line to the access logger (the message and reqId every line has). */
export function writeRequestLog(access: Logger, reqId: string, line: RequestLogLine): void {
  access.info({ reqId, ...line }, 'request');
}
