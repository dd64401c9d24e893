// The gateway's own polls of checks still being collected, for when no webhook comes: once for
// all apps that asked, not before the upstream's Retry-After (plus webhooks.pollGraceMs when the
// upstream is expected to deliver events), under the name "_gateway" in the shared rate budget.
// A 200 is a finished check (CheckCompletion.complete, as for every other way the gateway learns
// of one); a 202 moves the next poll to its Retry-After. A lock per check keeps replicas from
// polling it together.
//
// Must never: poll a check before its Retry-After, or on real timers.
import type { Clock } from '../clock.ts';
import type { StateStore } from '../store/store.ts';
import { type GovernedUpstream, sentOrThrow } from '../upstream/governed-upstream.ts';
import { type CheckCompletion, eventOfResult } from './check-completion.ts';
import type { CheckTickets } from './check-tickets.ts';

export interface PollerOptions {
  store: StateStore;
  clock: Clock;
  tickets: CheckTickets;
  upstream: Pick<GovernedUpstream, 'request'>;
  completion: CheckCompletion;
  replicaId: string;
  graceMs: number;
  timeoutMs: number;
  onError?: (err: unknown) => void;
}

export class CheckPoller {
  constructor(private readonly options: PollerOptions) {}

  /** Polls every check whose next poll is due; returns how many were polled. */
  async pollDue(): Promise<number> {
    const { tickets, clock, store, replicaId } = this.options;
    let polled = 0;
    for (const id of await tickets.pendingIds()) {
      const ticket = await tickets.get(id);
      if (!ticket || ticket.ready) continue;
      if (clock.now() < (ticket.nextPollAt ?? ticket.pendingAt) + this.options.graceMs) continue;
      const lock = `check-poll-lock:${id}`;
      if (!(await store.acquireLock(lock, replicaId, this.options.timeoutMs + 5_000))) continue;
      try {
        polled += 1;
        // Not started (the rate queue refused): reported, polled again at the next look.
        const res = sentOrThrow(
          await this.options.upstream.request({
            method: 'GET',
            path: `/v1/checks/${id}`,
            timeoutMs: this.options.timeoutMs,
            app: '_gateway',
            route: 'check_poll',
          }),
        );
        const fresh = (await tickets.get(id)) ?? ticket;
        if (res.status === 202) {
          await tickets.stillPending(fresh, clock.now(), res.headers['retry-after']);
        } else if (res.status === 200 && !fresh.ready) {
          const event = eventOfResult(fresh, res.body);
          // Polled again at the next look: a body the gateway cannot read tells apps nothing.
          if (!event) throw new Error(`check ${id}: the 200 body is not a JSON object`);
          await this.options.completion.complete({
            event,
            result: res.body,
            // Ready no earlier than the last time it was seen collecting.
            readyAt: fresh.pendingAt,
            base: '',
          });
        }
      } catch (err) {
        this.options.onError?.(err);
      } finally {
        await store.releaseLock(lock, replicaId).catch(() => undefined);
      }
    }
    return polled;
  }
}
