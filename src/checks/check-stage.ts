// Stage: what checks mean to the gateway (DESIGN.md "Checks and webhooks").
// - Polls: a check belongs to the apps that asked for it. Any other app, and any id the gateway
//   never handed out, gets 404 as if the check did not exist (the upstream would serve any
//   check of the shared account). Ids compare in lower case, as the upstream's do.
// - Creation: while a check of the same company and purpose is still being collected, another
//   app asking for it joins that check (202 with the same ticket, charged 0) instead of paying
//   for a second one. A 202 records the ticket for its app.
// - After a poll: a 202 moves the ticket's "still collecting at" mark; a 200 opens the coverage
//   window from that mark (the data became ready no earlier) and stops offering the check.
// Must never: answer a poll from another app's ticket, or open a window later than the data.
import { isRefusal, type Outcome } from '../pipeline/outcome.ts';
import { refuse } from '../pipeline/refusals.ts';
import type { StageFactory } from '../pipeline/stage.ts';
import { canonicalCheckId } from './check-tickets.ts';

export const checks: StageFactory = (deps) => async (ctx, next) => {
  const app = ctx.app?.name;
  if (!app) return next();
  if (ctx.route.name === 'check_poll') {
    const id = canonicalCheckId(ctx.call.params.uuid!);
    const ticket = await deps.tickets.get(id);
    if (!ticket || !(await deps.tickets.allows(id, app))) return refuse('not_found', {}, 'No such check');
    ctx.ticket = ticket;
    const out = await next();
    if (isRefusal(out) || ctx.cache === 'HIT' || ctx.cache === 'STALE') return out;
    if (out.status === 202) {
      await deps.tickets.stillPending(ticket, deps.clock.now());
    } else if (out.status === 200) {
      const kind = ticket.purpose === 'requisites' ? 'requisites' : 'dossier';
      // A requisites check also ends an open dossier window (the spec's window table).
      const opening = kind === 'requisites' ? 'requisites_check' : 'dossier';
      const windows = await deps.windows.open(ticket.inn, opening, ticket.pendingAt);
      const expiry = deps.windows.expiry(windows, kind);
      if (expiry > deps.clock.now()) ctx.windowExpires = new Date(expiry).toISOString();
      if (!ticket.ready) await deps.tickets.markReady(ticket);
    }
    return out;
  }
  if (ctx.route.name !== 'check_create' || ctx.shape === null) return next();
  const purpose = (ctx.call.body as { purpose?: string }).purpose === 'requisites' ? 'requisites' : 'dossier';
  const inn = ctx.shape.inn;
  const pending = await deps.tickets.pendingFor(inn, purpose);
  if (pending?.ticketBody) {
    await deps.tickets.join(pending.checkId, app);
    ctx.chargedMinor = 0;
    ctx.cache = 'COALESCED';
    return {
      status: 202,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        ...(pending.retryAfter ? { 'retry-after': pending.retryAfter } : {}),
      },
      body: Buffer.from(pending.ticketBody),
    };
  }
  const out: Outcome = await next();
  if (isRefusal(out) || out.status !== 202) return out;
  const checkId = checkIdOf(out.body);
  if (!checkId) return out;
  if (ctx.cache === 'COALESCED') {
    // A follower of a concurrent identical creation: the leader recorded the ticket.
    await deps.tickets.join(checkId, app);
    return out;
  }
  await deps.tickets.put({
    checkId,
    app,
    inn,
    purpose,
    pendingAt: deps.clock.now(),
    ticketBody: out.body.toString('utf8'),
    retryAfter: out.headers['retry-after'],
  });
  return out;
};

function checkIdOf(body: Buffer): string | null {
  try {
    const id = (JSON.parse(body.toString('utf8')) as { check_id?: unknown }).check_id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}
