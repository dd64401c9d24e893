// Stage: sends the call again while the retry policy (retry-policy.ts, pure) says so, sleeping
// on the injected clock, always with the same Idempotency-Key. Transport failures that outlive
// the deadline become upstream_unavailable (502, or 504 on timeout); for a charged call such a
// failure is an unknown outcome (the upstream may have charged), which the record stage keeps
// counted until the reconciler knows.
import { neverSent } from '../../upstream/governed-upstream.ts';
import { UpstreamFailure } from '../../upstream/upstream-client.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isAnswer, isRefusal, type Refusal, type Unsent } from '../outcome.ts';
import { upstreamUnavailable } from '../refusals.ts';
import { type AttemptResult, errorCodeOf, retryDelay } from '../retry-policy.ts';
import type { Next, StageFactory } from '../stage.ts';

/** An answer whose code says nothing was charged, so a fresh key cannot double a charge. */
function provesNoCharge(out: Answer): boolean {
  const charged = Number(out.headers['x-charged-minor'] ?? '0');
  return out.status === 503 && !(charged > 0) && errorCodeOf(out.body) === 'billing_unavailable';
}

/** What this stage uses of PipelineDeps. */
export type RetryDeps = Pick<PipelineDeps, 'charges' | 'clock' | 'random'>;

export const retry: StageFactory<RetryDeps> = (deps) => async (ctx, next) => {
  const safe = ctx.shape === null || ctx.idempotencyKey !== undefined;
  let last: Answer | null = null;
  let lastFailure: UpstreamFailure | null = null;
  for (let attempt = 0; ; attempt++) {
    ctx.attempt = attempt;
    const tried = await attemptOnce(next);
    if ('stop' in tried) {
      // A refusal of the rate queue, or not sent (a send condition said no, the client left while
      // queued). On the first attempt that is the outcome (and a shutdown always is); on a retry
      // the attempts before it were sent, and their last outcome stands (one that may have
      // charged stays counted: ctx.outcomeUnknown).
      const out = tried.stop;
      if (attempt === 0 || (isRefusal(out) && out.details.reason === 'shutdown')) return out;
      break;
    }
    if ('answer' in tried) {
      last = tried.answer;
      lastFailure = null;
    } else {
      lastFailure = tried.failure;
      last = null;
      if (!neverSent(tried.failure)) ctx.outcomeUnknown = true;
    }
    const delay = retryDelay({
      attempt,
      result: resultOf(tried),
      safe,
      remainingMs: (ctx.callDeadline ?? ctx.deadline) - deps.clock.now(),
      random: deps.random,
    });
    if (delay === null) break;
    if (last && ctx.charge && ctx.idempotencyKey && provesNoCharge(last)) {
      // 503 billing_unavailable: "no charge could be made". An upstream that stores error answers
      // for the key's lifetime would replay it to every retry with the same key, so the retry
      // gets a fresh one (the pending entry learns it first, for the reconciler).
      const fresh = `${ctx.charge.pending.key}.r${attempt + 1}`;
      if (await deps.charges.rekey(ctx.charge, fresh)) ctx.idempotencyKey = fresh;
    }
    await deps.clock.sleep(delay);
  }
  if (last) {
    ctx.outcomeUnknown = false;
    return last;
  }
  return upstreamUnavailable(
    lastFailure?.kind === 'connection' ? 'connection' : 'timeout',
    lastFailure?.kind === 'connection' ? {} : { timeout_ms: ctx.timeoutMs },
    lastFailure ?? undefined,
  );
};

/** One attempt: an answer, a transport failure (the call may have gone out), or an outcome that ends the attempts. */
type Tried = { answer: Answer } | { failure: UpstreamFailure } | { stop: Refusal | Unsent };

async function attemptOnce(next: Next): Promise<Tried> {
  try {
    const out = await next();
    return isAnswer(out) ? { answer: out } : { stop: out };
  } catch (err) {
    if (err instanceof UpstreamFailure) return { failure: err };
    throw err;
  }
}

/** What the retry policy is told of an attempt. */
function resultOf(tried: Exclude<Tried, { stop: unknown }>): AttemptResult {
  if ('failure' in tried)
    return { kind: 'failure', failure: tried.failure.kind === 'timeout' ? 'timeout' : 'connection' };
  const out = tried.answer;
  return {
    kind: 'answer',
    status: out.status,
    code: out.status >= 400 ? errorCodeOf(out.body) : null,
    retryAfter: out.headers['retry-after'],
  };
}
