// Stage: what checks mean to the gateway (DESIGN.md "Checks and webhooks").
// - Polls: a check belongs to the apps that asked for it. Any other app, and any id the gateway
//   never handed out, gets 404 as if the check did not exist (the upstream would serve any
//   check of the shared account). Ids compare in lower case, as the upstream's do.
// - Creation: while a check of the same company and purpose is still being collected, another
//   app asking for it joins that check (202 with the same ticket, charged 0) instead of paying
//   for a second one. A 202 records the ticket for its app.
// - After a poll: a 202 moves the ticket's "still collecting at" mark; a 200 opens the coverage
//   window from that mark (the data became ready no earlier) and stops offering the check.
// - Polls earlier than the upstream's Retry-After are answered here (202, the ticket, a
//   Retry-After saying when to poll again): no upstream call. Finished checks are cache hits.
// - URLs in a ticket name the gateway (server.publicUrl, else the address this app used), never
//   the upstream; each app's address is kept for that app's own webhooks (check-tickets.ts).
// Must never: answer a poll from another app's ticket, or open a window later than the data.
import type { Answer, Outcome } from '../pipeline/outcome.ts';
import { isRefusal } from '../pipeline/outcome.ts';
import { refuse } from '../pipeline/refusals.ts';
import type { StageFactory } from '../pipeline/stage.ts';
import { checkRequestOf } from './check-request.ts';
import { type CheckTicket, canonicalCheckId, retryAfterMs } from './check-tickets.ts';
import { publicBase, toGatewayUrls, upstreamOrigin } from './gateway-urls.ts';

export const checks: StageFactory = (deps) => async (ctx, next) => {
  const app = ctx.app?.name;
  if (!app) return next();
  const base = () => publicBase(deps.config, ctx.headers);
  const withGatewayUrls = (out: Answer): Answer =>
    out.headers['content-encoding']
      ? out
      : {
          ...out,
          body: Buffer.from(toGatewayUrls(out.body.toString('utf8'), upstreamOrigin(deps.config), base())),
        };
  if (ctx.route.name === 'check_poll') {
    const id = canonicalCheckId(ctx.call.params.uuid!);
    const ticket = await deps.tickets.get(id);
    if (!ticket || !(await deps.tickets.allows(id, app))) return refuse('not_found', {}, 'No such check');
    ctx.ticket = ticket;
    const now = deps.clock.now();
    if (!ticket.ready && ticket.ticketBody && ticket.nextPollAt !== undefined && now < ticket.nextPollAt) {
      // Earlier than the upstream's Retry-After: it would only say "still collecting".
      ctx.cache = 'HIT';
      ctx.chargedMinor = 0;
      return localTicket(ticket, Math.ceil((ticket.nextPollAt - now) / 1000), base());
    }
    const out = await next();
    if (isRefusal(out) || ctx.cache === 'HIT' || ctx.cache === 'STALE') return out;
    if (out.status === 202) {
      await deps.tickets.stillPending(ticket, deps.clock.now(), out.headers['retry-after']);
      return withGatewayUrls(out);
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
  const check = checkRequestOf(ctx);
  if (!check) return next();
  const { inn, purpose } = check;
  const pending = await deps.tickets.pendingFor(inn, purpose);
  if (pending?.ticketBody) {
    await deps.tickets.join(pending.checkId, app, base());
    ctx.chargedMinor = 0;
    ctx.cache = 'COALESCED';
    return {
      status: 202,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        ...(pending.retryAfter ? { 'retry-after': pending.retryAfter } : {}),
      },
      body: Buffer.from(toGatewayUrls(pending.ticketBody, upstreamOrigin(deps.config), base())),
    };
  }
  const out: Outcome = await next();
  if (isRefusal(out) || out.status !== 202) return out;
  const checkId = checkIdOf(out.body);
  if (!checkId) return out;
  if (ctx.cache === 'COALESCED') {
    // A follower of a concurrent identical creation: the leader recorded the ticket.
    await deps.tickets.join(checkId, app, base());
    return withGatewayUrls(out);
  }
  const now = deps.clock.now();
  await deps.tickets.put(
    {
      checkId,
      app,
      inn,
      purpose,
      pendingAt: now,
      ticketBody: out.body.toString('utf8'),
      retryAfter: out.headers['retry-after'],
      nextPollAt: now + retryAfterMs(out.headers['retry-after']),
    },
    base(),
  );
  return withGatewayUrls(out);
};

/** The ticket's 202 as the gateway answers an early poll: when to poll again, URLs to the gateway. */
function localTicket(ticket: CheckTicket, retryAfterSeconds: number, base: string): Answer {
  let body = ticket.ticketBody ?? '{}';
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if ('retry_after' in parsed) parsed.retry_after = retryAfterSeconds;
    if ('poll_url' in parsed) parsed.poll_url = `${base}/v1/checks/${ticket.checkId}`;
    body = JSON.stringify(parsed);
  } catch {
    // Replayed as the upstream sent it.
  }
  return {
    status: 202,
    headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(retryAfterSeconds) },
    body: Buffer.from(body),
  };
}

function checkIdOf(body: Buffer): string | null {
  try {
    const id = (JSON.parse(body.toString('utf8')) as { check_id?: unknown }).check_id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}
