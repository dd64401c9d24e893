// Stage: sends the call again while the retry policy (retry-policy.ts, pure) says so, sleeping
// on the injected clock, always with the same Idempotency-Key. Transport failures that outlive
// the deadline become upstream_unavailable (502, or 504 on timeout); for a charged call such a
// failure is an unknown outcome (the upstream may have charged), which the record stage keeps
// counted until the reconciler knows.
import { neverSent } from '../../upstream/governed-upstream.ts';
import { UpstreamFailure } from '../../upstream/upstream-client.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isRefusal, isUnsent } from '../outcome.ts';
import { upstreamUnavailable } from '../refusals.ts';
import { errorCodeOf, retryDelay } from '../retry-policy.ts';
import type { StageFactory } from '../stage.ts';

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
    let delay: number | null;
    try {
      const out = await next();
      if (isUnsent(out)) {
        // Not sent (a send condition said no, or the client left while queued). On the first
        // attempt that is the outcome; on a retry the attempts before it were sent, and their
        // last outcome stands (one that may have charged stays counted: ctx.outcomeUnknown).
        if (attempt === 0) return out;
        break;
      }
      if (isRefusal(out)) {
        // A refusal of the rate queue: on the first attempt it is the answer; on a retry the
        // last outcome stands.
        if (attempt === 0 || out.details.reason === 'shutdown') return out;
        break;
      }
      last = out;
      lastFailure = null;
      delay = retryDelay({
        attempt,
        result: {
          kind: 'answer',
          status: out.status,
          code: out.status >= 400 ? errorCodeOf(out.body) : null,
          retryAfter: out.headers['retry-after'],
        },
        safe,
        remainingMs: (ctx.callDeadline ?? ctx.deadline) - deps.clock.now(),
        random: deps.random,
      });
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      lastFailure = err;
      last = null;
      if (!neverSent(err)) ctx.outcomeUnknown = true;
      delay = retryDelay({
        attempt,
        result: { kind: 'failure', failure: err.kind === 'timeout' ? 'timeout' : 'connection' },
        safe,
        remainingMs: (ctx.callDeadline ?? ctx.deadline) - deps.clock.now(),
        random: deps.random,
      });
    }
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
