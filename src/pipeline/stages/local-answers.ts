// Stage: what the gateway answers by itself, without the upstream.
// - GET /v1/me: from the gateway's own copy of the upstream's account record (refreshed in the
//   background), plus a `gateway` object telling the app who it is to the gateway: its name,
//   scopes and budgets (limit, spent, remaining per period). With no copy yet, it goes upstream.
// - only-if-cached on a route the cache never stores: always a miss (RFC 9111 5.2.1.7), so 504
//   not_cached, and never an upstream call or a charge.
import { refuse } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';

export const localAnswers: StageFactory = (deps) => async (ctx, next) => {
  if (ctx.route.name === 'me') {
    let { me } = deps.prices.snapshot();
    if (!me) {
      await deps.prices.refresh();
      me = deps.prices.snapshot().me;
    }
    if (!me) return next();
    const app = ctx.app!;
    // Budgets live in the shared store; while it is unreachable /v1/me still answers, with
    // `budgets: null` (not known now), like the upstream's own "not yet known" nulls.
    const statuses = await deps.budgets.status(app.name).catch(() => null);
    const budgets =
      statuses?.map((b) => ({
        scope: b.scope,
        period: b.period,
        period_id: b.periodId,
        limit_minor: b.limitMinor,
        soft_minor: b.softMinor,
        spent_minor: b.spentMinor,
        reserved_minor: b.reservedMinor,
        remaining_minor: b.remainingMinor,
      })) ?? null;
    ctx.cache = 'HIT';
    const age = Math.max(0, Math.floor((deps.clock.now() - deps.prices.snapshot().refreshedAt) / 1000));
    const body = {
      ...me,
      gateway: { app: app.name, scopes: app.scopes, time_zone: deps.config.cost.timeZone, budgets },
    };
    return {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', age: String(age) },
      body: Buffer.from(JSON.stringify(body)),
    };
  }
  if (ctx.policy === null && ctx.directives.onlyIfCached) return refuse('not_cached');
  return next();
};
