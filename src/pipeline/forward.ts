// Stage: the upstream call, with retries. Builds the outgoing request (only the headers the
// upstream needs; the upstream key is added by UpstreamClient), keeps each attempt inside
// the request's deadline, and retries what is safe to retry: connection errors, timeouts,
// 409 idempotency_in_progress and 503 billing_unavailable, reusing the SAME Idempotency-Key.
// A charged call is never sent, let alone retried, without a key. Transport failures that
// outlive the deadline become upstream_unavailable (502, or 504 on timeout).
// Every attempt first waits for a start from the shared rate budget (GovernedUpstream): the
// first within the app's X-Max-Wait-Ms, a retry only within what is left of the deadline. A
// first attempt the queue cannot start in time is 429 rate_limited and never reaches the
// upstream; time spent queued does not eat into the upstream timeout.
import { ApiError } from '../errors.ts';
import { type GovernedUpstream, QueueRefusal } from '../upstream/governed-upstream.ts';
import { UpstreamFailure, type UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';

export class ClientGone extends Error {
  constructor() {
    super('client went away');
    this.name = 'ClientGone';
  }
}

export interface ForwardOptions {
  /** Absolute deadline (ms, deps.now clock) for all attempts together, queue waits included. */
  deadline: number;
  /** Per-attempt upper bound (the spec's advised timeout for the route). */
  timeoutMs: number;
  idempotencyKey?: string;
  /** Retry transport failures and retryable statuses (must be true only when keyed or free). */
  retry: boolean;
  now: () => number;
  /** Keep going when the client disconnects (a charged call already under way). */
  survivesClient?: boolean;
  /** X-Max-Wait-Ms: longest wait in the rate queue for the first attempt (class default if unset). */
  maxWaitMs?: number;
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
  upstream: GovernedUpstream,
  options: ForwardOptions,
): Promise<UpstreamResponse> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  if (ctx.rawBody !== undefined) headers['content-type'] = 'application/json';
  let lastFailure: UpstreamFailure | null = null;
  let lastAnswer: UpstreamResponse | null = null;
  // Until the first attempt starts, the outer deadline (queue allowance included) binds; from
  // then on all attempts together get timeoutMs, so time spent queued is not upstream time.
  let deadline = options.deadline;
  const started = () => {
    deadline = Math.min(options.deadline, options.now() + options.timeoutMs);
  };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const remaining = deadline - options.now();
    if (remaining <= 0) break;
    try {
      const res = await upstream.request({
        app: ctx.app?.name ?? '_public',
        route: ctx.route.name,
        maxWaitMs: attempt === 0 ? options.maxWaitMs : remaining,
        queueSignal: ctx.signal,
        onStart: attempt === 0 ? started : undefined,
        method: ctx.route.method,
        path: ctx.pathAndQuery,
        headers,
        body: ctx.rawBody,
        // An upper bound; a retry may overrun the deadline by at most its own queue wait.
        timeoutMs: Math.min(options.timeoutMs, remaining),
        signal: options.survivesClient ? undefined : ctx.signal,
      });
      ctx.queuedMs = (ctx.queuedMs ?? 0) + res.queuedMs;
      ctx.upstreamMs = (ctx.upstreamMs ?? 0) + res.durationMs;
      ctx.upstreamAttempts = attempt + 1;
      if (!options.retry || !retryableAnswer(res)) return res;
      lastAnswer = res;
      const wait = backoffMs(attempt, res.headers['retry-after']);
      if (options.now() + wait >= deadline) return res;
      await sleep(wait);
    } catch (err) {
      if (err instanceof QueueRefusal) {
        if (err.denial.reason === 'aborted') throw new ClientGone();
        if (attempt === 0 || err.denial.reason === 'shutdown') throw rateLimited(err);
        // A retry the queue cannot start in time: the last outcome stands.
        if (lastAnswer) return lastAnswer;
        break;
      }
      if (!(err instanceof UpstreamFailure)) throw err;
      if (err.kind === 'aborted') throw new ClientGone();
      lastFailure = err;
      ctx.upstreamAttempts = attempt + 1;
      if (!options.retry) break;
      const wait = backoffMs(attempt, undefined);
      if (options.now() + wait >= deadline) break;
      await sleep(wait);
    }
  }
  throw failureToApiError(lastFailure, options.timeoutMs);
}

/** The gateway's own 429: the shared budget cannot start this call within the caller's wait. */
export function rateLimited(refusal: QueueRefusal): ApiError {
  const { limit, reason, retryAfterMs } = refusal.denial;
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const why: Record<string, string> = {
    deadline: `The shared ${limit} rate budget cannot start this call within the allowed wait`,
    app_cap: `This app's own ${limit} rate cap is spent`,
    paused: `The upstream asked to pause ${limit} calls`,
    shutdown: 'The gateway is shutting down',
  };
  return new ApiError(
    'rate_limited',
    { limit, reason, retry_after_ms: Math.max(0, Math.ceil(retryAfterMs)) },
    why[reason] ?? `Rate limit ${limit}`,
    { headers: { 'retry-after': String(seconds) } },
  );
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
