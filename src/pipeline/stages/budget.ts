// Stage: the spend caps and the pending entry (DESIGN.md "Budgets", issue #10). Estimates what
// the call will cost (0 when an open window covers it), then, in ONE atomic store step, holds
// that on every budget counter that applies AND writes the call's pending ledger entry (its
// idempotency key, app, INN, kind, estimate, what to replay). A cap that would be passed is
// 402 budget_exceeded: no upstream call, no charge. That step goes out together with the rate
// take of the stages below (one round trip, not two); the upstream call is sent only once it has
// answered (send condition `charge`, send-conditions.ts), and a refused one gives the slot back. From here
// on the charge is the record stage's: settled, released, or left counted for the reconciler —
// never forgotten.
import { estimateMinor } from '../../cost/estimate.ts';
import { ApiError } from '../../errors.ts';
import { endWithError } from '../../ops/tracing.ts';
import type { PipelineDeps } from '../deps.ts';
import { isUnsent, type Outcome, type Refusal, unsent } from '../outcome.ts';
import { fromError, refuse } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';
import { retryStoreFaults, storeRetry } from '../store-retry-options.ts';

/** What this stage uses of PipelineDeps. */
export type BudgetDeps = Pick<
  PipelineDeps,
  'budgets' | 'charges' | 'clock' | 'config' | 'logger' | 'outbox' | 'prices' | 'random'
>;

export const budget: StageFactory<BudgetDeps> = (deps) => async (ctx, next) => {
  if (ctx.shape === null || ctx.app === null || ctx.idempotencyKey === undefined) return next();
  const app = ctx.app.name;
  // Caps finance changed on another replica apply here too (BudgetGuard.refresh: memoized).
  await deps.budgets.refresh();
  const capped = deps.budgets.hasCaps(app);
  const shape = ctx.shape;
  const estimateNow = () =>
    estimateMinor(shape, ctx.covered === true, (k) =>
      capped ? deps.prices.priceForBudget(k) : deps.prices.price(k),
    );
  let estimate = pricedOrRefused(estimateNow);
  if (typeof estimate !== 'number') {
    // No price ever seen and a cap applies: read /v1/me once more before refusing (503
    // prices_unknown, with when to retry, when it still lists none).
    await deps.prices.refresh();
    estimate = pricedOrRefused(estimateNow);
    if (typeof estimate !== 'number') {
      // Estimated as charged on windows guessed closed (stages/cache.ts) that were open: nothing
      // was held; the cache stage starts over from the store's windows.
      if ((await ctx.sendWhen.get('windows')) === false) return unsent('windows_disagree');
      return estimate;
    }
  }
  ctx.estimateMinor = estimate;
  const request = {
    key: ctx.idempotencyKey,
    requestId: ctx.requestId,
    app,
    operation: ctx.route.name,
    kind: ctx.shape.kind,
    inn: ctx.shape.inn,
    estimateMinor: estimate,
    method: ctx.route.method,
    target: ctx.pathAndQuery,
    body: ctx.rawBody ? ctx.rawBody.toString('utf8') : null,
    opens: ctx.shape.opens,
  };
  // The charge is opened while the stages below take the rate slot (one round trip for both, not
  // two in a row); the call itself is sent only once the entry is written (send condition
  // `charge`).
  const span = ctx.trace?.child('charge open', { 'cpgw.estimate_minor': estimate });
  // A store fault is waited out within the deadline (a failover), then answered 503.
  const opening = retryStoreFaults(() => deps.charges.open(request), storeRetry(ctx, deps)).then(
    (opened) => {
      if (span) {
        if (opened.ok) span.end();
        else endWithError(span, 'budget_exceeded');
      }
      if (opened.ok) ctx.charge = opened.charge;
      return { opened };
    },
    (error: unknown) => {
      endWithError(span, (error as Error)?.name ?? 'error');
      return { error };
    },
  );
  ctx.sendWhen.set(
    'charge',
    opening.then((r) => 'opened' in r && r.opened.ok),
  );
  let out: Outcome | undefined;
  let fault: { err: unknown } | undefined;
  try {
    out = await next();
  } catch (err) {
    fault = { err };
  }
  const result = await opening;
  // Another replica leads the call: this one follows it (charged 0), whatever the store said. Or
  // the windows the estimate was made on were not the store's: the cache stage starts over.
  const follows =
    out !== undefined && isUnsent(out) && (out.why === 'not_leader' || out.why === 'windows_disagree');
  if ('error' in result) {
    // The store failed: the entry may or may not have been written (a lost reply). The call was
    // not sent, so it is released (through the outbox: in order, once the store is back), never
    // replayed by the reconciler as a purchase nobody wants any more.
    await deps.outbox.submit({ op: 'release', key: request.key });
    if (follows) return out!;
    throw result.error;
  }
  const opened = result.opened;
  if (!opened.ok && !follows) {
    // Refused before anything was sent (the upstream stage stopped at the `charge` condition).
    deps.logger.warn({ app, period: opened.period, scope: opened.scope, estimate }, 'budget exceeded');
    return refuse('budget_exceeded', {
      app,
      scope: opened.scope,
      period: opened.period,
      limit_minor: opened.limitMinor,
      spent_minor: opened.spentMinor,
      reserved_minor: opened.reservedMinor,
      estimate_minor: estimate,
    });
  }
  if (fault) throw fault.err;
  return out!;
};

/** The estimate, or the refusal when a capped app's call needs a price never seen (prices_unknown). */
function pricedOrRefused(estimate: () => number): number | Refusal {
  try {
    return estimate();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'prices_unknown') return fromError(err)!;
    throw err;
  }
}
