// What a finished check does to the gateway, whoever learnt it first (the upstream's webhook, or
// the gateway's own poll when no webhook came): the result goes into the response cache (a
// finished check is immutable), the coverage window opens from the moment the data was ready,
// the ticket is marked ready for every app that asked (their polls become cache hits), and the
// event is queued for each of those apps that subscribed a webhook. Idempotent: running it twice
// for one check changes nothing more (one delivery per check and app).
//
// Must never: open a window later than the data was ready, deliver to an app that did not ask
// for the check, or hand an app the upstream's address.
import type { ResponseCache } from '../cache/index.ts';
import { NO_DIRECTIVES } from '../cache/index.ts';
import type { Clock } from '../clock.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { WindowTracker } from '../cost/window-tracker.ts';
import { type CheckTickets, canonicalCheckId } from './check-tickets.ts';
import { toGatewayUrls, upstreamOrigin } from './gateway-urls.ts';
import type { WebhookDeliveries } from './webhook-deliveries.ts';

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

export interface CompletionDeps {
  config: GatewayConfig;
  clock: Clock;
  cache: ResponseCache;
  windows: WindowTracker;
  tickets: CheckTickets;
  deliveries: WebhookDeliveries;
}

export class CheckCompletion {
  constructor(private readonly deps: CompletionDeps) {}

  /**
   * A check finished. `result` is exactly what GET /v1/checks/{id} answers 200 with; `readyAt`
   * the moment the data was ready (clamped to now); `base` the gateway's address when no
   * server.publicUrl is set.
   */
  async complete(input: {
    event: CheckEvent;
    result: Buffer;
    readyAt: number;
    base: string;
  }): Promise<number> {
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
    if (event.data.found) {
      // A requisites check also ends an open dossier window (the spec's window table).
      const readyAt = Math.min(input.readyAt, deps.clock.now());
      await deps.windows.open(inn, purpose === 'requisites' ? 'requisites_check' : 'dossier', readyAt);
    }
    if (!ticket) return 0; // not a check any app asked the gateway for
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
    return queued;
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

/** What GET /v1/checks/{id} answers for this finished check (the event carries the same data). */
export function resultOf(event: CheckEvent): Buffer {
  const d = event.data;
  if (d.dossier !== undefined) return Buffer.from(JSON.stringify(d.dossier));
  return Buffer.from(JSON.stringify({ found: d.found, requisites: d.requisites ?? null }));
}
