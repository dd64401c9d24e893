// The one error catalogue: every code the upstream documents plus the codes the gateway
// makes itself, each with its HTTP status and default message. The emulator and the gateway
// both answer through errorEnvelope(), so the envelope shape lives once.
// README.md carries the same table; test/unit/errors.test.ts keeps the two in step.

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
