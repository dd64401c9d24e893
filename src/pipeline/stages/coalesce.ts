// Stage: identical requests in flight share one upstream call, in this process and across
// replicas (DESIGN.md "Coalescing"). GETs by route and normalized target; POST /v1/check by
// company and purpose, so concurrent requests for the same fresh check pay for one (the
// check stage then lets every follower's app poll it). A follower is charged 0. A refusal meant
// for the leader's app alone (its budget, its rate cap) is not shared: the follower goes on by
// itself.
import { normalizedTarget } from '../../cost/idempotency-keys.ts';
import type { RequestContext } from '../context.ts';
import { type Answer, isRefusal, type Outcome } from '../outcome.ts';
import type { StageFactory } from '../stage.ts';

const PER_APP_REFUSALS = new Set(['budget_exceeded', 'rate_limited']);

export const coalesce: StageFactory = (deps) => async (ctx, next) => {
  const key = coalesceKey(ctx);
  if (key === null) return next();
  const { answer, follower } = await deps.coalescer.run<Outcome>(key, ctx.deadline, next, (o) =>
    isRefusal(o) ? null : o,
  );
  if (!follower) return answer;
  if (isRefusal(answer as Outcome)) {
    return PER_APP_REFUSALS.has((answer as { code: string }).code) ? next() : (answer as Outcome);
  }
  ctx.cache = 'COALESCED';
  ctx.chargedMinor = 0;
  const shared = answer as Answer;
  deps.metrics.saved(ctx, 'coalesced', Number(shared.headers['x-charged-minor'] ?? 0));
  return { ...shared, headers: { ...shared.headers, 'x-charged-minor': '0' } };
};

function coalesceKey(ctx: RequestContext): string | null {
  if (ctx.route.method === 'GET') return `${ctx.route.name}:${normalizedTarget(ctx.pathAndQuery)}`;
  if (ctx.route.name === 'check_create' && ctx.shape) {
    const purpose =
      (ctx.call.body as { purpose?: string }).purpose === 'requisites' ? 'requisites' : 'dossier';
    return `check_create:${ctx.shape.inn}:${purpose}`;
  }
  return null;
}
