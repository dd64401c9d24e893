// The one error catalogue: every code the upstream documents plus the codes the gateway
// makes itself, each with its HTTP status and default message, and the envelope they travel in.
// The shape lives once: errorEnvelope() builds it, sendError() writes it through fastify (the
// gateway's and the emulator's every refusal: thrown errors, pipeline refusals, 404s, the
// webhook and /metrics doors), envelopeCode() reads the code back out of a body. Only the
// refusals written on a raw socket (no reply object there) call errorEnvelope() directly.
// README.md carries the same table; test/unit/errors.test.ts keeps the two in step.
//
// Must never: do I/O beyond the one reply it is handed, or import from the rest of the gateway.
import type { FastifyReply } from 'fastify';

export const ERRORS = {
  unauthorized: { status: 401, message: 'API key is not accepted' },
  feature_unavailable: { status: 403, message: 'This feature is not available for the key' },
  insufficient_funds: { status: 402, message: 'Insufficient funds on the account balance' },
  price_inactive: { status: 403, message: 'This request kind is not on sale' },
  quota_exceeded: { status: 429, message: 'Tariff quota is used up' },
  rate_limited: { status: 429, message: 'Too many requests' },
  validation_failed: { status: 422, message: 'Request failed validation' },
  not_found: { status: 404, message: 'Not found' },
  idempotency_key_reused: {
    status: 422,
    message: 'Idempotency-Key was already used with a different request',
  },
  idempotency_in_progress: { status: 409, message: 'A request with this Idempotency-Key is still executing' },
  sandbox_unavailable: { status: 403, message: 'The sandbox environment is closed; use a production key' },
  source_unavailable: { status: 502, message: 'A register did not answer; retry in a minute' },
  billing_unavailable: { status: 503, message: 'The payment system did not answer; no charge was made' },
  internal_error: { status: 500, message: 'Internal error; quote meta.request_id to support' },
  // Gateway-made codes (DESIGN.md, "Contract with internal apps").
  budget_exceeded: { status: 402, message: 'The spend budget for this period is used up' },
  not_cached: { status: 504, message: 'No cached answer and only-if-cached was requested' },
  upstream_unavailable: { status: 502, message: 'The upstream service is unreachable' },
  store_unavailable: { status: 503, message: 'Shared state is unavailable' },
  precondition_failed: {
    status: 412,
    message: 'The resource changed since the version in If-Match; details carry the current one',
  },
  prices_unknown: {
    status: 503,
    message: 'Prices are not known yet and a spend budget applies; retry shortly',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorEnvelope {
  error: { code: string; message: string; details: Record<string, unknown> };
  meta: { request_id: string };
}

export function errorEnvelope(
  code: ErrorCode,
  requestId: string,
  details: Record<string, unknown> = {},
  message: string = ERRORS[code].message,
): ErrorEnvelope {
  return { error: { code, message, details }, meta: { request_id: requestId } };
}

/** What an error answer carries: an ApiError and a pipeline Refusal both have these. */
export interface ErrorAnswer {
  code: ErrorCode;
  status: number;
  message: string;
  details: Record<string, unknown>;
  headers: Readonly<Record<string, string>>;
}

/**
 * Writes an error answer: its status, its headers and the envelope, with `requestId` (the
 * request's own id unless the caller answers under another) as meta.request_id.
 */
export function sendError(
  reply: FastifyReply,
  error: ErrorAnswer,
  requestId: string = String(reply.request.id),
): FastifyReply {
  return reply
    .code(error.status)
    .headers(error.headers)
    .send(errorEnvelope(error.code, requestId, error.details, error.message));
}

/** error.code of an error envelope (the gateway's or the upstream's); only small bodies are parsed. */
export function envelopeCode(body: Buffer | string): string | undefined {
  if (body.length > 65_536) return undefined;
  try {
    const code = (JSON.parse(body.toString()) as { error?: { code?: unknown } } | null)?.error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** One field problem inside validation_failed's `details.fields` (shape chosen in docs/upstream-gaps.md). */
export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

/**
 * A refusal carried as a value-like exception: thrown by a stage, turned into one HTTP
 * answer in one place. `status` defaults to the catalogue's; 502 and 504 share a code.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(
    readonly code: ErrorCode,
    readonly details: Record<string, unknown> = {},
    message?: string,
    options?: { status?: number; headers?: Record<string, string>; cause?: unknown },
  ) {
    super(message ?? ERRORS[code].message, options?.cause ? { cause: options.cause } : undefined);
    this.status = options?.status ?? ERRORS[code].status;
    this.headers = options?.headers ?? {};
  }

  static validation(fields: FieldProblem[]): ApiError {
    return new ApiError('validation_failed', { fields });
  }
}
