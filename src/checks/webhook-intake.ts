// The upstream's events, from the ingress to their effects. An event is written to the state
// store (keyed by its id, set only when absent: that write is also the de-duplication) BEFORE
// the ingress answers 2xx, and processed after the answer; a process that dies in between
// leaves the event stored as "new" and the next start (of any replica) processes it. A replayed
// id is dropped. A store that cannot take the event makes the ingress answer 503, so the
// upstream repeats the delivery: nothing is acknowledged that was not kept.
//
// Must never: acknowledge an event it did not store, or process one id's effects as new twice.
import type { Clock } from '../clock.ts';
import { getAll } from '../store/state-store.ts';
import type { StateStore } from '../store/store.ts';
import { asCheckEvent, type CheckCompletion, type CheckEvent, resultOf } from './check-completion.ts';

const EVENT_TTL_MS = 7 * 86_400_000;
const PREFIX = 'webhook:event:';
const eventKey = (id: string) => `${PREFIX}${id.toLowerCase()}`;

interface StoredEvent {
  state: 'new' | 'done';
  /** The raw body (while new), the gateway's base URL at receipt. */
  body?: string;
  base?: string;
  receivedAt: number;
}

export type IntakeResult = 'accepted' | 'duplicate';

export interface IntakeOptions {
  store: StateStore;
  clock: Clock;
  completion: CheckCompletion;
  replicaId: string;
  onError?: (err: unknown, eventId: string) => void;
}

export class WebhookIntake {
  constructor(private readonly options: IntakeOptions) {}

  /** Stores a verified event (throws when the store cannot); 'duplicate' when its id was seen. */
  async receive(event: CheckEvent, raw: Buffer, base: string): Promise<IntakeResult> {
    const record: StoredEvent = {
      state: 'new',
      body: raw.toString('utf8'),
      base,
      receivedAt: this.options.clock.now(),
    };
    const added = await this.options.store.setIfAbsent(
      eventKey(event.id),
      JSON.stringify(record),
      EVENT_TTL_MS,
    );
    return added ? 'accepted' : 'duplicate';
  }

  /** The work after the 2xx: one event's effects, then marked done. Never throws. */
  async process(eventId: string): Promise<void> {
    const { store, replicaId } = this.options;
    const lock = `webhook:event-lock:${eventId.toLowerCase()}`;
    try {
      if (!(await store.acquireLock(lock, replicaId, 60_000))) return;
      try {
        const raw = await store.get(eventKey(eventId));
        if (!raw) return;
        const stored = JSON.parse(raw) as StoredEvent;
        if (stored.state !== 'new' || stored.body === undefined) return;
        const event = asCheckEvent(JSON.parse(stored.body));
        if (event && event.event === 'check.completed') {
          const created = event.created_at ? Date.parse(event.created_at) : Number.NaN;
          await this.options.completion.complete({
            event,
            result: resultOf(event),
            readyAt: Number.isFinite(created) ? created : stored.receivedAt,
            base: stored.base ?? '',
          });
        }
        const done: StoredEvent = { state: 'done', receivedAt: stored.receivedAt };
        await store.set(eventKey(eventId), JSON.stringify(done), EVENT_TTL_MS);
      } finally {
        await store.releaseLock(lock, replicaId).catch(() => undefined);
      }
    } catch (err) {
      this.options.onError?.(err, eventId);
    }
  }

  /**
   * Events a previous run stored but did not finish: processed now. Returns how many. Every event
   * kept is looked at (a processed one keeps no body, so reading them is cheap); it looked at the
   * first 1,000 listed only, the oldest, so an unfinished event past those waited for the poller.
   */
  async recover(): Promise<number> {
    const { store } = this.options;
    const keys = await store.keys(PREFIX, 10_000_000);
    const raws = await getAll(store, keys);
    let n = 0;
    for (const [i, raw] of raws.entries()) {
      if (!raw || (JSON.parse(raw) as StoredEvent).state !== 'new') continue;
      await this.process(keys[i]!.slice(PREFIX.length));
      n += 1;
    }
    return n;
  }
}
