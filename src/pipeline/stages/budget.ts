// Stage: the spend caps (DESIGN.md "Budgets"). Estimates what the call will cost (0 when an open
// window covers it), reserves that on every budget counter that applies in one atomic step, and
// refuses with 402 budget_exceeded when a cap would be passed: no upstream call, no charge. The
// record stage settles the hold with the real charge; whatever it did not settle is released.
import { estimateMinor } from '../../cost/estimate.ts';
import { isRefusal } from '../outcome.ts';
import { refuse } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';

export const budget: StageFactory = (deps) => async (ctx, next) => {
  if (ctx.shape === null || ctx.app === null) return next();
  const app = ctx.app.name;
  const capped = deps.budgets.hasCaps(app);
  const estimate = estimateMinor(ctx.shape, ctx.covered === true, (k) =>
    capped ? deps.prices.priceForBudget(k) : deps.prices.price(k),
  );
  ctx.estimateMinor = estimate;
  const reserved = await deps.budgets.reserve(ctx.requestId, app, estimate);
  if (!reserved.ok) {
    deps.logger.warn({ app, period: reserved.period, scope: reserved.scope, estimate }, 'budget exceeded');
    return refuse('budget_exceeded', {
      app,
      scope: reserved.scope,
      period: reserved.period,
      limit_minor: reserved.limitMinor,
      spent_minor: reserved.spentMinor,
      reserved_minor: reserved.reservedMinor,
      estimate_minor: estimate,
    });
  }
  ctx.hold = reserved.hold;
  try {
    const out = await next();
    if (isRefusal(out) && ctx.hold) await deps.budgets.release(ctx.hold);
    return out;
  } catch (err) {
    if (ctx.hold) await deps.budgets.release(ctx.hold).catch(() => {});
    throw err;
  }
};
