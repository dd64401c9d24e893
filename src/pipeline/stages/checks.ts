// Stage: what checks mean to a proxied request (DESIGN.md "Checks and webhooks"). The stage list
// (pipeline/index.ts) points here; the check logic it calls is beside it in checks/.
// - Polls: a check belongs to the apps that asked for it. Any other app, and any id the gateway
//   never handed out, gets 404 as if the check did not exist (the upstream would serve any
//   check of the shared account). Ids compare in lower case, as the upstream's do.
// - Polls earlier than the upstream's Retry-After are answered here (202, the ticket, a
//   Retry-After saying when to poll again): no upstream call. Finished checks are cache hits.
// - After a poll: a 202 moves the ticket's "still collecting at" mark; a 200 is a finished check,
//   handed to CheckCompletion.complete() like the upstream's event and the gateway's own poll
//   (window from that mark, ticket ready, events for the owners that subscribed). This stage has
//   no handle on the replica's delivery worker: its events go out at the worker's next look
//   (webhooks.workerIntervalMs).
// - Creation: while a check of the same company and purpose is still being collected, another
//   app asking for it joins that check (202 with the same ticket, charged 0) instead of paying
//   for a second one. A 202 records the ticket for its app.
// - URLs in a ticket name the gateway (server.publicUrl, else the address this app used), never
//   the upstream; each app's address is kept for that app's own webhooks (check-tickets.ts).
// Must never: answer a poll from another app's ticket, open a window later than the data, or
// read the request body (the purpose comes validated: check-request.ts).

import { CheckCompletion, eventOfResult } from '../../checks/check-completion.ts';
import { type CheckRequest, checkRequestOf } from '../../checks/check-request.ts';
import { type CheckTicket, canonicalCheckId, retryAfterMs } from '../../checks/check-tickets.ts';
import { publicBase, toGatewayUrls, upstreamOrigin } from '../../checks/gateway-urls.ts';
import { storedDeliveryQueue } from '../../checks/webhook-deliveries.ts';
import type { GatewayConfig } from '../../config/schema.ts';
import { copyWith } from '../../object-copy.ts';
import type { RequestContext } from '../context.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isAnswer, type Outcome } from '../outcome.ts';
import { refuse } from '../refusals.ts';
import type { Next, StageFactory } from '../stage.ts';

/** What this stage uses of PipelineDeps. */
export type ChecksDeps = Pick<PipelineDeps, 'cache' | 'clock' | 'config' | 'store' | 'tickets' | 'windows'>;

export const checks: StageFactory<ChecksDeps> = (deps) => {
  const completion = new CheckCompletion({
    config: deps.config,
    store: deps.store,
    clock: deps.clock,
    cache: deps.cache,
    windows: deps.windows,
    tickets: deps.tickets,
    deliveries: storedDeliveryQueue(deps.store, deps.clock),
  });
  return async (ctx, next) => {
    const app = ctx.app?.name;
    if (!app) return next();
    if (ctx.route.name === 'check_poll') return poll(ctx, next, app, deps, completion);
    const check = checkRequestOf(ctx);
    return check ? create(ctx, next, app, check, deps) : next();
  };
};

async function poll(
  ctx: RequestContext,
  next: Next,
  app: string,
  deps: ChecksDeps,
  completion: CheckCompletion,
): Promise<Outcome> {
  const id = canonicalCheckId(ctx.call.params.uuid!);
  const ticket = await deps.tickets.get(id);
  if (!ticket || !(await deps.tickets.allows(id, app))) return refuse('not_found', {}, 'No such check');
  ctx.ticket = ticket;
  const base = publicBase(deps.config, ctx.headers);
  const now = deps.clock.now();
  if (!ticket.ready && ticket.ticketBody && ticket.nextPollAt !== undefined && now < ticket.nextPollAt) {
    // Earlier than the upstream's Retry-After: it would only say "still collecting".
    return {
      ...localTicket(ticket, Math.ceil((ticket.nextPollAt - now) / 1000), base),
      cache: 'HIT',
      chargedMinor: 0,
    };
  }
  const out = await next();
  if (!isAnswer(out) || out.cache === 'HIT' || out.cache === 'STALE') return out;
  if (out.status === 202) {
    await deps.tickets.stillPending(ticket, deps.clock.now(), out.headers['retry-after']);
    return withGatewayUrls(out, deps.config, base);
  }
  if (out.status !== 200) return out;
  // A body the gateway cannot read is left to its own poller (which then retries it).
  const event = eventOfResult(ticket, out.body);
  if (!event) return out;
  // The data became ready no earlier than the check was last seen collecting. No fallback base:
  // this app's address is recorded for its own events and must never name another's (issue 31).
  const { windows } = await completion.complete({
    event,
    result: out.body,
    readyAt: ticket.pendingAt,
    base: '',
  });
  const windowExpires = windows ? deps.windows.expiresText(windows, ticket.purpose) : undefined;
  return windowExpires ? copyWith(out, { windowExpires }) : out;
}

async function create(
  ctx: RequestContext,
  next: Next,
  app: string,
  check: CheckRequest,
  deps: ChecksDeps,
): Promise<Outcome> {
  const base = publicBase(deps.config, ctx.headers);
  const pending = await deps.tickets.pendingFor(check.inn, check.purpose);
  if (pending?.ticketBody) {
    await deps.tickets.join(pending.checkId, app, base);
    return {
      cache: 'COALESCED',
      chargedMinor: 0,
      status: 202,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        ...(pending.retryAfter ? { 'retry-after': pending.retryAfter } : {}),
      },
      body: Buffer.from(toGatewayUrls(pending.ticketBody, upstreamOrigin(deps.config), base)),
    };
  }
  const out = await next();
  if (!isAnswer(out) || out.status !== 202) return out;
  const checkId = checkIdOf(out.body);
  if (!checkId) return out;
  if (out.cache === 'COALESCED') {
    // A follower of a concurrent identical creation: the leader recorded the ticket.
    await deps.tickets.join(checkId, app, base);
    return withGatewayUrls(out, deps.config, base);
  }
  const now = deps.clock.now();
  await deps.tickets.put(
    {
      checkId,
      app,
      inn: check.inn,
      purpose: check.purpose,
      pendingAt: now,
      ticketBody: out.body.toString('utf8'),
      retryAfter: out.headers['retry-after'],
      nextPollAt: now + retryAfterMs(out.headers['retry-after']),
    },
    base,
  );
  return withGatewayUrls(out, deps.config, base);
}

/** The upstream's answer with its URLs naming the gateway (a compressed body is left as it is). */
function withGatewayUrls(out: Answer, config: GatewayConfig, base: string): Answer {
  if (out.headers['content-encoding']) return out;
  return copyWith(out, {
    body: Buffer.from(toGatewayUrls(out.body.toString('utf8'), upstreamOrigin(config), base)),
  });
}

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
