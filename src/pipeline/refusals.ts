// The one place refusals are made. Every stage that says no returns one of these values;
// respond.ts writes it (errors.ts sendError) as the upstream's error envelope with the gateway's
// request id.
// Faults thrown from deeper code (a store that is down, a bad input caught by a helper) are
// turned into the same values by fromError(), so the app always gets the envelope, never a 500
// for a bad input.
//
// Must never: put a token, an upstream key or a stack in `details` or `message`.
import { ApiError, ERRORS, type ErrorCode, type FieldProblem } from '../errors.ts';
import type { Denial } from '../limits/index.ts';
import { StoreUnavailableError } from '../store/store.ts';
import type { Refusal } from './outcome.ts';

export function refuse(
  code: ErrorCode,
  details: Record<string, unknown> = {},
  message?: string,
  options?: { status?: number; headers?: Record<string, string>; cause?: unknown },
): Refusal {
  return {
    refusal: true,
    code,
    status: options?.status ?? ERRORS[code].status,
    message: message ?? ERRORS[code].message,
    details,
    headers: options?.headers ?? {},
    cause: options?.cause,
  };
}

export function invalid(fields: FieldProblem[]): Refusal {
  return refuse('validation_failed', { fields });
}

/** The gateway's own 429: the shared budget cannot start this call within the caller's wait. */
export function rateLimited(denial: Denial): Refusal {
  const { limit, reason, retryAfterMs } = denial;
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const why: Record<string, string> = {
    deadline: `The shared ${limit} rate budget cannot start this call within the allowed wait`,
    app_cap: `This app's own ${limit} rate cap is spent`,
    paused: `The upstream asked to pause ${limit} calls`,
    shutdown: 'The gateway is shutting down',
  };
  return refuse(
    'rate_limited',
    { limit, reason, retry_after_ms: Math.max(0, Math.ceil(retryAfterMs)) },
    why[reason] ?? `Rate limit ${limit}`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

/** The upstream could not be reached or did not answer within the request's allowance. */
export function upstreamUnavailable(
  reason: 'timeout' | 'connection' | 'charge_in_flight' | 'in_progress',
  details: Record<string, unknown> = {},
  cause?: unknown,
): Refusal {
  const messages = {
    timeout: 'The upstream did not answer in time',
    connection: 'The upstream service is unreachable',
    charge_in_flight: 'A paid call for this company is still in flight; retry shortly (it will then be free)',
    in_progress: 'The upstream is still executing this request; retry with the same Idempotency-Key',
  };
  const status = reason === 'connection' ? 502 : 504;
  const headers: Record<string, string> =
    reason === 'charge_in_flight' || reason === 'in_progress' ? { 'retry-after': '1' } : {};
  return refuse('upstream_unavailable', { reason, ...details }, messages[reason], { status, headers, cause });
}

/** Retry-After of a 503 store_unavailable: the store client reconnects within about a second. */
export const STORE_RETRY_AFTER = { 'retry-after': '1' } as const;

export function storeUnavailable(cause?: unknown): Refusal {
  return refuse('store_unavailable', {}, undefined, { cause, headers: { ...STORE_RETRY_AFTER } });
}

/** A thrown fault or ApiError as a refusal; null for what is not ours to answer (fastify's own errors). */
export function fromError(err: unknown): Refusal | null {
  if (err instanceof ApiError)
    return refuse(err.code, err.details, err.message, {
      status: err.status,
      headers: err.headers,
      cause: err.cause,
    });
  if (err instanceof StoreUnavailableError) return storeUnavailable(err);
  return null;
}
