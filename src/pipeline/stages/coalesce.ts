// Stage: identical requests in flight share one upstream call, in this process and across
// replicas (DESIGN.md "Coalescing"). GETs by route and normalized target; POST /v1/check by
// company and purpose, so concurrent requests for the same fresh check pay for one (the
// check stage then lets every follower's app poll it). A follower is charged 0. A refusal meant
// for the leader's app alone (its budget, its rate cap) is not shared: the followers go on
// again together, one of them leading the next call.
import { checkRequestOf } from '../../checks/check-request.ts';
import { normalizedTarget } from '../../cost/idempotency-keys.ts';
import { copyWith } from '../../object-copy.ts';
import { now } from '../../ops/tracing.ts';
import type { RequestContext } from '../context.ts';
import type { PipelineDeps } from '../deps.ts';
import { isAnswer, isRefusal, isUnsent, type Outcome } from '../outcome.ts';
import type { Next, StageFactory } from '../stage.ts';

const PER_APP_REFUSALS = new Set(['budget_exceeded', 'rate_limited']);

/** How many times followers of a leader refused for its own app go on together again. */
const MAX_ROUNDS = 3;

/** What this stage uses of PipelineDeps. */
export type CoalesceDeps = Pick<PipelineDeps, 'coalescer' | 'metrics'>;

export const coalesce: StageFactory<CoalesceDeps> = (deps) => {
  const join = async (ctx: RequestContext, next: Next, round: number): Promise<Outcome> => {
    const key = coalesceKey(ctx);
    if (key === null) return next();
    // A GET asks for the cross-replica lead without waiting for it (one round trip, not two in a
    // row). A free read (a free route, or a read an open window covers) asks alongside its rate
    // slot: if another replica leads, it gives its slot back and releases its charge entry, which
    // held nothing. A read that may be charged asks alongside the company's lock: the charge gate
    // waits for the lead before anything is opened, and a replica that does not lead gives the
    // lock back and follows (stages/charge-gate.ts). A check (POST) asks first.
    const early = ctx.route.method === 'GET';
    // Whether it follows is known only once it is answered: a follower's wait span is made then.
    const waitStart = ctx.trace ? now() : 0;
    const { answer, follower } = await deps.coalescer.run<Outcome>(
      key,
      ctx.deadline,
      (lead) => {
        // The call is sent only once this replica leads it (send condition `lead`). Without one
        // (the lead already held, or in this process only) none is left from an early ask that
        // another replica won: this replica followed it, then took the lead when it was let go.
        if (lead) ctx.sendWhen.set('lead', lead);
        else ctx.sendWhen.delete('lead');
        return next();
      },
      (o) => (isAnswer(o) ? o : null),
      // A GET's answer is parked for other replicas only when one of them waits for it; a check
      // (POST) is always parked: a follower that missed it would buy a second check.
      {
        early,
        parkOnDemand: ctx.route.method === 'GET',
        notLed: (o) => isUnsent(o) && o.why === 'not_leader',
      },
    );
    if (!follower) return answer as Outcome;
    const shared = answer as Outcome;
    ctx.trace
      ?.childSince('coalesce follower wait', waitStart, {
        'cpgw.coalesce_round': round,
        'cpgw.shared': isAnswer(shared),
      })
      .end();
    // The leader's own budget or rate cap refused it, or it sent nothing (its client left, its
    // windows were not the store's): this follower's app may still go. The followers go on
    // together again (one of them leads), not each on its own: one key slot and one upstream
    // call, not one per follower.
    const again = isUnsent(shared) || (isRefusal(shared) && PER_APP_REFUSALS.has(shared.code));
    if (again) return round < MAX_ROUNDS ? join(ctx, next, round + 1) : next();
    if (!isAnswer(shared)) return shared;
    deps.metrics.saved(ctx, 'coalesced', Number(shared.headers['x-charged-minor'] ?? 0));
    return {
      status: shared.status,
      headers: copyWith(shared.headers, { 'x-charged-minor': '0' }),
      body: shared.body,
      cache: 'COALESCED',
      chargedMinor: 0,
    };
  };
  return (ctx, next) => join(ctx, next, 0);
};

function coalesceKey(ctx: RequestContext): string | null {
  if (ctx.route.method === 'GET') return `${ctx.route.name}:${normalizedTarget(ctx.pathAndQuery)}`;
  const check = checkRequestOf(ctx);
  if (check) return `check_create:${check.inn}:${check.purpose}`;
  return null;
}
