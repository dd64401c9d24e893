// The one place the request lifecycle of an upstream endpoint is declared: authenticate
// (401), sandbox (403), scope (403), rate budget (429), Idempotency-Key format (422), then
// the route's own work; latency (the `latency` mode), faults, idempotent replay (of errors too
// in the `replayErrors: all` mode) and the X-RateLimit-* headers are applied here. Refusals
// are ApiError values that the emulator's error handler writes with sendError() (errors.ts).
// Routes must never write to the reply themselves.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkIdempotencyKey } from '../domain/requests.ts';
import { ApiError, ERRORS, type FieldProblem } from '../errors.ts';
import type { Answer, EmulatorContext } from './emulator-context.ts';
import type { FaultEffect } from './fault-injector.ts';
import { requestFingerprint } from './idempotency-store.ts';
import type { ApiKey, Scope } from './key-registry.ts';
import type { LimitClass } from './rate-limiter.ts';
import type { LoggedRequest } from './request-log.ts';
import { isoMsk } from './time-format.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Emulator-clock time the request arrived (for the request log). */
    emulatorAt: number;
    /** The authenticated key, once known. */
    emulatorKey: ApiKey | null;
  }
  interface FastifyContextConfig {
    routeId?: string;
  }
}

export type RouteId =
  | 'me'
  | 'company'
  | 'section'
  | 'check'
  | 'check_poll'
  | 'requisites'
  | 'bank'
  | 'person'
  | 'suggest'
  | 'search';

export interface RouteSpec {
  id: RouteId;
  method: 'GET' | 'POST';
  url: string;
  scope: Scope | null;
  /** Counters this call spends besides nothing else; suggest spends only its own. */
  spends: (key: ApiKey) => Array<[LimitClass, string]>;
  /** Accepts Idempotency-Key. */
  idempotent: boolean;
  /** A charged endpoint: X-Charged-Minor stands on every answer (0 on refusals). */
  charged?: boolean;
}

export interface Call {
  req: FastifyRequest;
  key: ApiKey;
  requestId: string;
  idempotencyKey: string | null;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** Waits the route's latency (emulator clock), then applies an injected fault (latency, 502 or 503). */
  faultGate(): Promise<void>;
  /** Runs the billable part under the Idempotency-Key protocol (a plain call without a key). */
  idempotent(body: unknown, run: () => Promise<Answer>): Promise<Answer>;
}

export type RouteHandler = (call: Call) => Promise<Answer>;

export const spendKey = (key: ApiKey): Array<[LimitClass, string]> => [['key', key.token]];

const JSON_TYPE = 'application/json; charset=utf-8';

/** Maps anything thrown into an ApiError (fastify's own 4xx become validation_failed). */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const status = (error as { statusCode?: number }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return ApiError.validation([{ field: 'body', code: 'invalid', message: (error as Error).message }]);
  }
  return new ApiError('internal_error', {}, ERRORS.internal_error.message, { cause: error });
}

function stringQuery(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    out[name] = typeof value === 'string' ? value : Array.isArray(value) ? String(value.at(-1)) : undefined;
  }
  return out;
}

export function defineRoute(
  app: FastifyInstance,
  ctx: EmulatorContext,
  spec: RouteSpec,
  handler: RouteHandler,
): void {
  app.route({
    method: spec.method,
    url: spec.url,
    config: { routeId: spec.id },
    handler: async (req, reply) => {
      if (spec.charged) reply.header('x-charged-minor', '0');
      const key = ctx.keys.authenticate(req.headers.authorization, ctx.clock.now());
      if (!key) throw new ApiError('unauthorized');
      req.emulatorKey = key;
      if (key.environment === 'sandbox') throw new ApiError('sandbox_unavailable');
      if (spec.scope && !key.scopes.includes(spec.scope)) {
        throw new ApiError('feature_unavailable', { required_scope: spec.scope });
      }
      const decision = ctx.limiter.take(spec.spends(key));
      if (!decision.ok) {
        throw new ApiError(decision.code, { limit: decision.limit }, undefined, {
          headers: { 'retry-after': String(decision.retryAfter) },
        });
      }
      const rawKey = req.headers['idempotency-key'];
      const idempotencyKey = spec.idempotent && typeof rawKey === 'string' ? rawKey : null;
      if (idempotencyKey !== null) {
        const problems = checkIdempotencyKey(idempotencyKey);
        if (problems.length) throw ApiError.validation(problems);
      }
      const badQuery = malformedQuery(req.url);
      if (badQuery) throw ApiError.validation([badQuery]);
      let fault: FaultEffect | null | undefined;
      let replayed = false;
      const call: Call = {
        req,
        key,
        requestId: String(req.id),
        idempotencyKey,
        params: req.params as Record<string, string>,
        query: stringQuery(req.query),
        faultGate: async () => {
          if (fault !== undefined) return;
          const latency = ctx.modes.latencyMs(spec.id);
          if (latency > 0) await new Promise<void>((resolve) => ctx.scheduler.after(latency, resolve));
          fault = ctx.faults.take(spec.id);
          if (!fault) return;
          if (fault.latency_ms) await new Promise((resolve) => setTimeout(resolve, fault!.latency_ms));
          if (fault.status === 502) throw new ApiError('source_unavailable');
          if (fault.status === 503) throw new ApiError('billing_unavailable');
        },
        idempotent: async (body, run) => {
          if (idempotencyKey === null) return run();
          const path = req.url.split('?')[0]!;
          const query = new URLSearchParams(
            req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '',
          );
          const fingerprint = requestFingerprint(req.method, path, query, body);
          const begin = ctx.idempotency.begin(key.accountId, idempotencyKey, fingerprint);
          if (begin.kind === 'replay') {
            replayed = true;
            if (begin.answer instanceof ApiError) throw replayedError(begin.answer);
            return begin.answer;
          }
          const keepErrors = ctx.modes.current.replayErrors === 'all';
          try {
            const answer = await run();
            begin.finish(answer.status < 300 || keepErrors ? answer : null);
            return answer;
          } catch (error) {
            begin.finish(keepErrors && error instanceof ApiError ? error : null);
            throw error;
          }
        },
      };
      const answer = await handler(call);
      if (fault?.drop_after_charge) {
        ctx.requests.record(logEntry(req, spec.id, 0));
        reply.hijack();
        req.raw.socket.destroy();
        return reply;
      }
      reply.code(answer.status).type(JSON_TYPE);
      if (answer.headers) reply.headers(answer.headers);
      if (replayed) reply.header('idempotent-replayed', 'true');
      if (answer.status < 300) {
        const budget = ctx.limiter.budget('key', key.token);
        reply.header('x-ratelimit-limit', String(budget.limit));
        reply.header('x-ratelimit-remaining', String(budget.remaining));
        reply.header('x-ratelimit-reset', String(budget.reset));
      }
      return reply.send(answer.body);
    },
  });
}

/** The stored refusal once more, marked as a replay (the envelope gets the current request id). */
function replayedError(stored: ApiError): ApiError {
  return new ApiError(stored.code, stored.details, stored.message, {
    status: stored.status,
    headers: { ...stored.headers, 'idempotent-replayed': 'true' },
  });
}

/**
 * The first query parameter whose percent-encoding does not decode (`q=%FF`), as a field
 * problem; fastify's parser would pass the raw text on as if it were the value.
 */
export function malformedQuery(url: string): FieldProblem | null {
  const at = url.indexOf('?');
  if (at < 0) return null;
  for (const pair of url.slice(at + 1).split('&')) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    for (const part of [name, value]) {
      try {
        decodeURIComponent(part.replaceAll('+', ' '));
      } catch {
        return {
          field: safeDecode(name) ?? 'query',
          code: 'invalid_encoding',
          message: 'percent-encoding is not valid UTF-8',
        };
      }
    }
  }
  return null;
}

function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return null;
  }
}

export function logEntry(req: FastifyRequest, route: string, status: number): LoggedRequest {
  return {
    at_ms: req.emulatorAt,
    at: isoMsk(req.emulatorAt),
    route,
    method: req.method,
    path: req.url.split('?')[0]!,
    status,
    request_id: String(req.id),
    key_name: req.emulatorKey?.name ?? null,
    ...(typeof req.headers.traceparent === 'string' ? { traceparent: req.headers.traceparent } : {}),
    ...(typeof req.headers['idempotency-key'] === 'string'
      ? { idempotency_key: req.headers['idempotency-key'] }
      : {}),
  };
}
