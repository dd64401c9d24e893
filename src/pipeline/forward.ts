// Stage: the upstream call, with retries. Builds the outgoing request (only the headers the
// upstream needs; the upstream key is added by UpstreamClient), keeps each attempt inside
// the request's deadline, and retries what is safe to retry: connection errors, timeouts,
// 409 idempotency_in_progress and 503 billing_unavailable, reusing the SAME Idempotency-Key.
// A charged call is never sent, let alone retried, without a key. Transport failures that
// outlive the deadline become upstream_unavailable (502, or 504 on timeout).
import { ApiError } from '../errors.ts';
import { type UpstreamClient, UpstreamFailure, type UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';

export class ClientGone extends Error {
  constructor() {
    super('client went away');
    this.name = 'ClientGone';
  }
}

export interface ForwardOptions {
  /** Absolute deadline (ms, deps.now clock) for all attempts together. */
  deadline: number;
  /** Per-attempt upper bound (the spec's advised timeout for the route). */
  timeoutMs: number;
  idempotencyKey?: string;
  /** Retry transport failures and retryable statuses (must be true only when keyed or free). */
  retry: boolean;
  now: () => number;
  /** Keep going when the client disconnects (a charged call already under way). */
  survivesClient?: boolean;
}

const RETRYABLE_CODES = new Set(['idempotency_in_progress', 'billing_unavailable']);
const MAX_ATTEMPTS = 6;

function retryableAnswer(res: UpstreamResponse): boolean {
  if (res.status !== 409 && res.status !== 503) return false;
  try {
    const code = (JSON.parse(res.body.toString('utf8')) as { error?: { code?: string } }).error?.code;
    return code !== undefined && RETRYABLE_CODES.has(code);
  } catch {
    return false;
  }
}

function backoffMs(attempt: number, retryAfter: string | undefined): number {
  const hinted = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : 0;
  const exp = Math.min(2_000, 100 * 2 ** attempt);
  return Math.max(hinted, exp / 2 + Math.random() * (exp / 2));
}

export async function forward(
  ctx: RequestContext,
  upstream: UpstreamClient,
  options: ForwardOptions,
): Promise<UpstreamResponse> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  if (ctx.rawBody !== undefined) headers['content-type'] = 'application/json';
  let lastFailure: UpstreamFailure | null = null;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const remaining = options.deadline - options.now();
    if (remaining <= 0) break;
    const timeoutMs = Math.min(options.timeoutMs, remaining);
    try {
      const res = await upstream.request({
        method: ctx.route.method,
        path: ctx.pathAndQuery,
        headers,
        body: ctx.rawBody,
        timeoutMs,
        signal: options.survivesClient ? undefined : ctx.signal,
      });
      ctx.upstreamMs = (ctx.upstreamMs ?? 0) + res.durationMs;
      ctx.upstreamAttempts = attempt + 1;
      if (!options.retry || !retryableAnswer(res)) return res;
      const wait = backoffMs(attempt, res.headers['retry-after']);
      if (options.now() + wait >= options.deadline) return res;
      await sleep(wait);
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      if (err.kind === 'aborted') throw new ClientGone();
      lastFailure = err;
      ctx.upstreamAttempts = attempt + 1;
      if (!options.retry) break;
      const wait = backoffMs(attempt, undefined);
      if (options.now() + wait >= options.deadline) break;
      await sleep(wait);
    }
  }
  throw failureToApiError(lastFailure, options.timeoutMs);
}

function failureToApiError(failure: UpstreamFailure | null, timeoutMs: number): ApiError {
  if (failure?.kind === 'timeout' || failure === null) {
    return new ApiError(
      'upstream_unavailable',
      { reason: 'timeout', timeout_ms: timeoutMs },
      'The upstream did not answer in time',
      { status: 504, cause: failure ?? undefined },
    );
  }
  return new ApiError(
    'upstream_unavailable',
    { reason: 'connection' },
    'The upstream service is unreachable',
    {
      status: 502,
      cause: failure,
    },
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
