// Stage: what a charged call's answer means for the money. Every kopeck the upstream reports
// (X-Charged-Minor) is settled against the budgets and written to the ledger exactly once
// (claimed by its idempotency key: an upstream replay of a recorded charge is never recorded
// twice), and a charged dossier, section or requisites read (or a check answered at once)
// opens the company's window from the moment the call started.

import { isRefusal } from '../outcome.ts';
import type { StageFactory } from '../stage.ts';

export const record: StageFactory = (deps) => async (ctx, next) => {
  if (ctx.shape === null || ctx.app === null) return next();
  const out = await next();
  if (isRefusal(out)) return out;
  const reported = Number(out.headers['x-charged-minor'] ?? '0');
  const charged = Number.isSafeInteger(reported) && reported > 0 ? reported : 0;
  const key = ctx.idempotencyKey ?? null;
  const actual = charged > 0 && (await deps.ledger.claim(key, ctx.requestId)) ? charged : 0;
  if (actual < charged && ctx.call.idempotencyKey === undefined)
    deps.metrics.saved(ctx, 'idempotent', ctx.estimateMinor ?? 0);
  const startedAt = ctx.startedAt ?? deps.clock.now();
  if (ctx.hold) {
    await deps.budgets.settle(ctx.hold, actual);
    ctx.hold = undefined;
  }
  if (actual > 0) {
    const entry = {
      at: startedAt,
      app: ctx.app.name,
      operation: ctx.route.name,
      kind: ctx.shape.kind,
      inn: ctx.shape.inn,
      amountMinor: actual,
      upstreamRequestId: out.headers['x-request-id'] ?? null,
      requestId: ctx.requestId,
      idempotencyKey: key,
    };
    await deps.ledger.append(entry);
    deps.metrics.charge(ctx.app.name, ctx.shape.kind, actual);
    deps.logger.info({ charge: entry }, 'charge');
  }
  const opens = ctx.shape.opens;
  if (opens && out.status === 200 && (actual > 0 || ctx.route.name === 'check_create')) {
    ctx.windows = await deps.windows.open(ctx.shape.inn, opens, startedAt);
  }
  if (opens && ctx.route.name !== 'check_create') {
    const windows = ctx.windows ?? (await deps.windows.get(ctx.shape.inn));
    const expiry = deps.windows.expiry(windows, opens);
    if (expiry > deps.clock.now()) ctx.windowExpires = new Date(expiry).toISOString();
  } else if (opens && ctx.windows && out.status === 200) {
    const expiry = deps.windows.expiry(ctx.windows, opens);
    if (expiry > deps.clock.now()) ctx.windowExpires = new Date(expiry).toISOString();
  }
  ctx.chargedMinor = actual;
  return { ...out, headers: { ...out.headers, 'x-charged-minor': String(actual) } };
};
