// Check tickets: which app created a check (another app polling it gets 404, as if it did
// not exist) and the last moment the check was seen still collecting, which is the earliest
// its data can have become ready: the coverage window is opened from there, never later.
import type { StateStore } from '../store/store.ts';

export interface CheckTicket {
  checkId: string;
  app: string;
  inn: string;
  purpose: 'dossier' | 'requisites';
  /** Last time (ms) the upstream said the check was still being collected. */
  pendingAt: number;
}

const TICKET_TTL_MS = 7 * 86_400_000;
const key = (checkId: string) => `check:${checkId}`;

export class CheckTickets {
  constructor(private readonly store: StateStore) {}

  async get(checkId: string): Promise<CheckTicket | null> {
    const raw = await this.store.get(key(checkId));
    return raw ? (JSON.parse(raw) as CheckTicket) : null;
  }

  async put(ticket: CheckTicket): Promise<void> {
    await this.store.set(key(ticket.checkId), JSON.stringify(ticket), TICKET_TTL_MS);
  }
}
