// Stage group: cost-aware execution of one upstream call (DESIGN.md "Cost rules").
//   coalesce (identical GETs share one call)
//     → charge gate (wait for an in-flight charge for the same company)
//     → estimate → budget reserve → upstream call with an idempotency key and retries
//     → settle with the real X-Charged-Minor → window, ledger, check ticket
// Every kopeck the upstream reports is settled against budgets and written to the ledger
// exactly once (claimed by idempotency key). A reservation never outlives its request.

import type { CheckTicket } from '../checks/check-tickets.ts';
import type { BudgetHold } from '../cost/budget-guard.ts';
import { ChargeWaitTimeout } from '../cost/charge-gate.ts';
import { chargeShape, estimateMinor } from '../cost/estimate.ts';
import { derivedKey, namespacedKey, normalizedTarget } from '../cost/idempotency-keys.ts';
import { ApiError } from '../errors.ts';
import type { UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import { forward } from './forward.ts';

export async function execute(ctx: RequestContext, deps: PipelineDeps): Promise<UpstreamResponse> {
  // The caller's whole allowance: the wait in the rate queue plus the upstream timeout.
  const deadline =
    deps.clock.now() +
    timeoutFor(ctx, deps) +
    deps.upstream.governor.maxWaitFor(ctx.route.name, ctx.maxWaitMs);
  if (ctx.route.method !== 'GET') return chargedOrFree(ctx, deps, deadline);
  const key = `${ctx.route.name}:${normalizedTarget(ctx.pathAndQuery)}`;
  const { answer, follower } = await deps.coalescer.run(key, deadline, () =>
    chargedOrFree(ctx, deps, deadline),
  );
  if (!follower) return answer as UpstreamResponse;
  ctx.cache = 'COALESCED';
  ctx.chargedMinor = 0;
  return { ...answer, headers: { ...answer.headers, 'x-charged-minor': '0' }, durationMs: 0 };
}

function timeoutFor(ctx: RequestContext, deps: PipelineDeps): number {
  return ctx.route.name === 'check_create'
    ? deps.config.upstream.checkTimeoutMs
    : deps.config.upstream.timeoutMs;
}

async function chargedOrFree(
  ctx: RequestContext,
  deps: PipelineDeps,
  deadline: number,
): Promise<UpstreamResponse> {
  const shape = chargeShape(ctx.route.name, ctx.call.params, ctx.call.body);
  const now = () => deps.clock.now();
  const timeoutMs = timeoutFor(ctx, deps);
  if (ctx.route.name === 'check_poll') await assertOwnsCheck(ctx, deps);
  if (shape.kind === null || shape.inn === null || ctx.app === null) {
    const res = await forward(ctx, deps.upstream, {
      deadline,
      timeoutMs,
      retry: true,
      now,
      maxWaitMs: ctx.maxWaitMs,
    });
    if (ctx.route.name === 'check_poll') await afterPoll(ctx, deps, res);
    return res;
  }
  const app = ctx.app.name;
  const inn = shape.inn;

  let gate: Awaited<ReturnType<typeof deps.gate.enter>> | null = null;
  if (shape.covered) {
    try {
      gate = await deps.gate.enter(inn, shape.covered, deadline, ctx.signal);
    } catch (err) {
      if (err instanceof ChargeWaitTimeout) {
        throw new ApiError(
          'upstream_unavailable',
          { reason: 'charge_in_flight', inn },
          'A paid call for this company is still in flight; retry shortly (it will then be free)',
          { status: 504, headers: { 'retry-after': '1' } },
        );
      }
      throw err;
    }
  }
  try {
    const covered = gate !== null && !gate.charged;
    const capped = deps.budgets.hasCaps(app);
    const estimate = estimateMinor(shape, covered, (k) =>
      capped ? deps.prices.priceForBudget(k) : deps.prices.price(k),
    );
    ctx.estimateMinor = estimate;
    const reserved = await deps.budgets.reserve(ctx.requestId, app, estimate);
    if (!reserved.ok) {
      deps.logger.warn({ app, period: reserved.period, scope: reserved.scope, estimate }, 'budget exceeded');
      throw new ApiError('budget_exceeded', {
        app,
        scope: reserved.scope,
        period: reserved.period,
        limit_minor: reserved.limitMinor,
        spent_minor: reserved.spentMinor,
        reserved_minor: reserved.reservedMinor,
        estimate_minor: estimate,
      });
    }
    const hold: BudgetHold = reserved.hold;
    const idempotencyKey =
      ctx.call.idempotencyKey !== undefined
        ? namespacedKey(app, ctx.call.idempotencyKey)
        : derivedKey(ctx.route.method, ctx.pathAndQuery, ctx.call.body, now());
    const startedAt = now();
    let res: UpstreamResponse;
    try {
      // Once a paid call is on its way it finishes even if the client leaves: the money is
      // spent either way, and the window and ledger must know.
      res = await forward(ctx, deps.upstream, {
        deadline,
        timeoutMs,
        retry: true,
        idempotencyKey,
        now,
        survivesClient: true,
        maxWaitMs: ctx.maxWaitMs,
      });
    } catch (err) {
      await deps.budgets.release(hold);
      throw err;
    }
    const reported = Number(res.headers['x-charged-minor'] ?? '0');
    const charged = Number.isSafeInteger(reported) && reported > 0 ? reported : 0;
    const actual = charged > 0 && (await deps.ledger.claim(idempotencyKey, ctx.requestId)) ? charged : 0;
    await deps.budgets.settle(hold, actual);
    if (actual > 0) {
      const entry = {
        at: startedAt,
        app,
        operation: ctx.route.name,
        kind: shape.kind,
        inn,
        amountMinor: actual,
        upstreamRequestId: res.headers['x-request-id'] ?? null,
        requestId: ctx.requestId,
        idempotencyKey,
      };
      await deps.ledger.append(entry);
      deps.logger.info({ charge: entry }, 'charge');
    }
    await afterCharge(ctx, deps, res, shape.opens, inn, startedAt, actual);
    ctx.chargedMinor = actual;
    return { ...res, headers: { ...res.headers, 'x-charged-minor': String(actual) } };
  } finally {
    if (gate?.charged) await gate.release();
  }
}

/** Records what a charged route's answer means for the company's window and check tickets. */
async function afterCharge(
  ctx: RequestContext,
  deps: PipelineDeps,
  res: UpstreamResponse,
  opens: 'dossier' | 'requisites' | null,
  inn: string,
  startedAt: number,
  actual: number,
): Promise<void> {
  if (ctx.route.name === 'check_create') {
    const purpose =
      (ctx.call.body as { purpose?: string }).purpose === 'requisites' ? 'requisites' : 'dossier';
    if (res.status === 200 && opens) {
      const w = await deps.windows.open(inn, opens, startedAt);
      ctx.windowExpires = new Date(deps.windows.expiry(w, opens)).toISOString();
    } else if (res.status === 202) {
      const checkId = parseJson(res.body)?.check_id;
      if (typeof checkId === 'string' && ctx.app) {
        await deps.tickets.put({ checkId, app: ctx.app.name, inn, purpose, pendingAt: deps.clock.now() });
      }
    }
    return;
  }
  if (!opens) return;
  const windows =
    res.status === 200 && actual > 0
      ? await deps.windows.open(inn, opens, startedAt)
      : await deps.windows.get(inn);
  const expiry = deps.windows.expiry(windows, opens);
  if (expiry > deps.clock.now()) ctx.windowExpires = new Date(expiry).toISOString();
}

/** Another app's check is answered 404, as if it did not exist. Returns the ticket when known. */
export async function assertOwnsCheck(ctx: RequestContext, deps: PipelineDeps): Promise<CheckTicket | null> {
  const ticket = await deps.tickets.get(ctx.call.params.uuid!);
  if (ticket && ctx.app && ticket.app !== ctx.app.name) throw new ApiError('not_found', {}, 'No such check');
  return ticket;
}

async function afterPoll(ctx: RequestContext, deps: PipelineDeps, res: UpstreamResponse): Promise<void> {
  const ticket = await deps.tickets.get(ctx.call.params.uuid!);
  if (!ticket) return;
  if (res.status === 202) {
    await deps.tickets.put({ ...ticket, pendingAt: deps.clock.now() });
  } else if (res.status === 200) {
    const kind = ticket.purpose === 'requisites' ? 'requisites' : 'dossier';
    const w = await deps.windows.open(ticket.inn, kind, ticket.pendingAt);
    const expiry = deps.windows.expiry(w, kind);
    if (expiry > deps.clock.now()) ctx.windowExpires = new Date(expiry).toISOString();
  }
}

function parseJson(body: Buffer): Record<string, unknown> | null {
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}
