// Check tickets: which apps asked for a check (every one of them may poll it; any other app
// gets 404, as if it did not exist), the last moment the check was seen still collecting (the
// earliest its data can have become ready: the coverage window is opened from there, never
// later), and the pending check of each company, so a second app asking for the same fresh check
// while it is collected shares it instead of paying again. Ids are kept in canonical lower case
// (the upstream compares them case-insensitively).
//
// Membership is one state key per (check, app), written with setIfAbsent: adding an app is never
// a read-modify-write of a shared list. Its value is the gateway's address as THAT app reached it
// (when server.publicUrl is unset), so an event delivered to an app names the address the app
// itself used: what one app sent never reaches another (issue 31: an app could place a host in
// every joiner's signed webhook when the ticket kept the creator's Host).
//
// Must never: let an app that did not ask for a check count as its owner, give one app's address
// for another app's URLs, or offer a check already seen ready as a pending one to join.
import { getAll } from '../store/state-store.ts';
import type { StateStore } from '../store/store.ts';

export interface CheckTicket {
  checkId: string;
  /** The app that created (and paid for) the check. */
  app: string;
  inn: string;
  purpose: 'dossier' | 'requisites';
  /** Last time (ms) the upstream said the check was still being collected. */
  pendingAt: number;
  /** The upstream's 202 body and Retry-After, replayed to an app that joins the check. */
  ticketBody?: string;
  retryAfter?: string;
  /** True once the check's data was seen ready (200). */
  ready?: boolean;
  /** When (ms) the upstream's Retry-After allows the next poll; earlier polls are answered locally. */
  nextPollAt?: number;
  /**
   * Written by versions before the per-app address (issue 31): the creator's address. Read only
   * for the creator's own deliveries; never for another app.
   */
  publicBase?: string;
}

/** Retry-After (seconds, as the upstream sends it) → ms; 0 when absent or not a number. */
export function retryAfterMs(value: string | undefined): number {
  const seconds = Number(value);
  return value !== undefined && Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds * 1000) : 0;
}

const TICKET_TTL_MS = 7 * 86_400_000;
/**
 * How long a company's pending check stays offered to other apps, and polled by the gateway,
 * past the upstream's Retry-After, counted from its creation or the last time the upstream said
 * it is still being collected (the spec: a check takes minutes at most; one that takes longer is
 * followed as long as the upstream says so).
 */
const PENDING_TTL_MS = 15 * 60_000;
const pendingTtl = (t: CheckTicket) =>
  Math.max(0, (t.nextPollAt ?? t.pendingAt) - t.pendingAt) + PENDING_TTL_MS;

export const canonicalCheckId = (id: string) => id.toLowerCase();
const key = (checkId: string) => `check:${canonicalCheckId(checkId)}`;
const memberKey = (checkId: string, app: string) => `check:${canonicalCheckId(checkId)}:app:${app}`;
const pendingKey = (inn: string, purpose: string) => `check-pending:${inn}:${purpose}`;

export class CheckTickets {
  constructor(private readonly store: StateStore) {}

  async get(checkId: string): Promise<CheckTicket | null> {
    const raw = await this.store.get(key(checkId));
    return raw ? (JSON.parse(raw) as CheckTicket) : null;
  }

  /** Whether `app` asked for this check (created it, or joined it). */
  async allows(checkId: string, app: string): Promise<boolean> {
    return (await this.store.get(memberKey(checkId, app))) !== null;
  }

  /**
   * The gateway's address as `app` reached it when it asked for this check (null: not recorded).
   * Only ever used for URLs that go to `app` itself.
   */
  async baseFor(checkId: string, app: string): Promise<string | null> {
    const value = await this.store.get(memberKey(checkId, app));
    if (value === null) return null;
    if (value.startsWith('http')) return value;
    const ticket = await this.get(checkId);
    return ticket && ticket.app === app && ticket.publicBase ? ticket.publicBase : null;
  }

  /** Records a check the upstream created (or answered at once) for `app`, reached at `base`. */
  async put(ticket: CheckTicket, base?: string): Promise<void> {
    const t = { ...ticket, checkId: canonicalCheckId(ticket.checkId) };
    await this.store.set(key(t.checkId), JSON.stringify(t), TICKET_TTL_MS);
    await this.join(t.checkId, t.app, base);
    if (!t.ready) await this.store.set(pendingKey(t.inn, t.purpose), t.checkId, pendingTtl(t));
  }

  /** Lets another app poll this check; `base`: the gateway's address as that app reached it. */
  async join(checkId: string, app: string, base?: string): Promise<void> {
    await this.store.setIfAbsent(memberKey(checkId, app), base || '1', TICKET_TTL_MS);
  }

  /** The check still being collected for this company and purpose, if any. */
  async pendingFor(inn: string, purpose: 'dossier' | 'requisites'): Promise<CheckTicket | null> {
    const id = await this.store.get(pendingKey(inn, purpose));
    if (!id) return null;
    const ticket = await this.get(id);
    return ticket && !ticket.ready ? ticket : null;
  }

  /** The upstream said the check is still collecting at `at`, to be polled again after `retryAfter`. */
  async stillPending(ticket: CheckTicket, at: number, retryAfter?: string): Promise<void> {
    const next: CheckTicket = { ...ticket, pendingAt: at, nextPollAt: at + retryAfterMs(retryAfter) };
    if (retryAfter !== undefined) next.retryAfter = retryAfter;
    await this.store.set(key(ticket.checkId), JSON.stringify(next), TICKET_TTL_MS);
    // Still collecting: offered and polled until Retry-After and PENDING_TTL_MS more. It used to
    // lapse 15 min after creation whatever Retry-After said, and the gateway then never polled a
    // check that took longer, so apps waiting for its webhook never got it. Not when the
    // company's pending entry names another check.
    const pending = pendingKey(ticket.inn, ticket.purpose);
    const current = await this.store.get(pending);
    if (current === null || current === ticket.checkId) {
      await this.store.set(pending, ticket.checkId, pendingTtl(next));
    }
  }

  /** Ids of the checks still being collected (one per company and purpose), for the gateway's own polls. */
  async pendingIds(limit = 1000): Promise<string[]> {
    const keys = await this.store.keys('check-pending:', limit);
    const ids = await getAll(this.store, keys);
    return ids.filter((id): id is string => typeof id === 'string' && id !== '');
  }

  /** The check's data was seen ready: it is no longer offered to other apps. */
  async markReady(ticket: CheckTicket): Promise<void> {
    await this.store.set(key(ticket.checkId), JSON.stringify({ ...ticket, ready: true }), TICKET_TTL_MS);
    // The state role has no delete (nothing else needs one): an empty value that expires at once.
    await this.store.set(pendingKey(ticket.inn, ticket.purpose), '', 1);
  }
}
