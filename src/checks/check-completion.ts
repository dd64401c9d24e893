// "A check finished", written once: whoever learnt it first (the upstream's webhook, the
// gateway's own poll when no webhook came, or an app's poll that found it ready) calls
// complete(), and it does everything a finished check means to the gateway: the result goes into
// the response cache (a finished check is immutable), the coverage window opens from the moment
// the data was ready (only when the registers found the company, as the upstream does), checks of
// the same company and purpose stop counting as cold (cold-checks.ts), the ticket is marked ready
// for every app that asked (their polls become cache hits), and the event is queued for each of
// those apps that subscribed a webhook. Idempotent: running it twice for one check changes
// nothing more (one delivery per check and app).
//
// Must never: open a window later than the data was ready, deliver to an app that did not ask
// for the check, or hand an app the upstream's address.
import { randomUUID } from 'node:crypto';
import type { ResponseCache } from '../cache/index.ts';
import { NO_DIRECTIVES } from '../cache/index.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { CompanyWindows, WindowTracker } from '../cost/window-tracker.ts';
import { type CheckTicket, type CheckTickets, canonicalCheckId } from './check-tickets.ts';
import { type ColdCheckDeps, rememberFresh } from './cold-checks.ts';
import { toGatewayUrls, upstreamOrigin } from './gateway-urls.ts';
import type { DeliveryQueue } from './webhook-deliveries.ts';

/** The `check.completed` envelope (api-spec "Events"). */
export interface CheckEvent {
  id: string;
  event: string;
  created_at?: string;
  data: {
    check_id: string;
    inn: string;
    found: boolean;
    dossier?: unknown;
    requisites?: unknown;
    dossier_url?: string;
  };
}

/** The envelope's shape checked; null when it is not a check.completed the gateway can use. */
export function asCheckEvent(value: unknown): CheckEvent | null {
  const e = value as Partial<CheckEvent> | null;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.event !== 'string') return null;
  const d = e.data as CheckEvent['data'] | undefined;
  if (!d || typeof d.check_id !== 'string' || typeof d.inn !== 'string') return null;
  return e as CheckEvent;
}

/**
 * The event for a check whose 200 the gateway read itself (its own poll, or an app's), as the
 * upstream would have sent it, under an id of the gateway's; null when the body is not a JSON
 * object (nothing the gateway can tell apps).
 */
export function eventOfResult(ticket: CheckTicket, result: Buffer): CheckEvent | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.toString('utf8'));
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object') return null;
  const body = parsed as { found?: unknown; requisites?: unknown };
  return {
    id: randomUUID(),
    event: 'check.completed',
    created_at: new Date(ticket.pendingAt).toISOString(),
    data: {
      check_id: ticket.checkId,
      inn: ticket.inn,
      found: body.found === true,
      ...(ticket.purpose === 'dossier' ? { dossier: body } : { requisites: body.requisites }),
    },
  };
}

/** What GET /v1/checks/{id} answers for this finished check (the event carries the same data). */
export function resultOf(event: CheckEvent): Buffer {
  const d = event.data;
  if (d.dossier !== undefined) return Buffer.from(JSON.stringify(d.dossier));
  return Buffer.from(JSON.stringify({ found: d.found, requisites: d.requisites ?? null }));
}

export interface CompletionDeps extends ColdCheckDeps {
  config: GatewayConfig;
  cache: ResponseCache;
  windows: WindowTracker;
  tickets: CheckTickets;
  deliveries: DeliveryQueue;
}

export interface Completed {
  /** Deliveries queued by this call (0 when every subscribed owner had its event already). */
  queued: number;
  /** The company's windows after the check's window opened; null when none opened (not found). */
  windows: CompanyWindows | null;
}

export class CheckCompletion {
  constructor(private readonly deps: CompletionDeps) {}

  /**
   * A check finished. `result` is exactly what GET /v1/checks/{id} answers 200 with; `readyAt`
   * the moment the data was ready (clamped to now); `base` the gateway's address when no
   * server.publicUrl is set and the app's own is not recorded.
   */
  async complete(input: {
    event: CheckEvent;
    result: Buffer;
    readyAt: number;
    base: string;
  }): Promise<Completed> {
    const { deps } = this;
    const { event } = input;
    const checkId = canonicalCheckId(event.data.check_id);
    const ticket = await deps.tickets.get(checkId);
    const inn = ticket?.inn ?? event.data.inn;
    await deps.cache.save(
      {
        route: 'check_poll',
        params: { uuid: checkId },
        query: {},
        app: null,
        directives: NO_DIRECTIVES,
        windowOpen: false,
        inn,
      },
      { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: input.result },
    );
    const purpose = ticket?.purpose ?? (event.data.dossier === undefined ? 'requisites' : 'dossier');
    let windows: CompanyWindows | null = null;
    if (event.data.found) {
      const readyAt = Math.min(input.readyAt, deps.clock.now());
      // A requisites check also ends an open dossier window (the spec's window table).
      windows = await deps.windows.open(
        inn,
        purpose === 'requisites' ? 'requisites_check' : 'dossier',
        readyAt,
      );
      await rememberFresh(deps, { inn, purpose }, readyAt);
    }
    if (!ticket) return { queued: 0, windows }; // not a check any app asked the gateway for
    if (!ticket.ready) await deps.tickets.markReady(ticket);
    let queued = 0;
    for (const app of deps.config.apps) {
      if (!app.webhook || !(await deps.tickets.allows(checkId, app.name))) continue;
      // Each app's event names the address that app itself used (or server.publicUrl): never
      // another app's Host, which would be signed with this app's secret (issue 31).
      const base =
        deps.config.server.publicUrl ?? (await deps.tickets.baseFor(checkId, app.name)) ?? input.base;
      const body = eventForApp(event, checkId, base, upstreamOrigin(deps.config));
      if (await deps.deliveries.enqueue({ checkId, app: app.name, url: app.webhook.url, event, body }))
        queued += 1;
    }
    return { queued, windows };
  }
}

/** The event as an app receives it: the same envelope, URLs naming the gateway. */
function eventForApp(event: CheckEvent, checkId: string, base: string, upstream: string): string {
  const root = base.replace(/\/+$/, '');
  const text = JSON.stringify({
    ...event,
    data: { ...event.data, dossier_url: `${root}/v1/checks/${checkId}` },
  });
  return toGatewayUrls(text, upstream, root);
}
