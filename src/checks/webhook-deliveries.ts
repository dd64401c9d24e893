// The persistent queue of events delivered to apps' webhooks. One record per (check, app) in the
// state store, written before any attempt: a replica that dies leaves it for another (or for its
// own next start). Attempts follow the upstream's schedule (at once, then after 1, 5, 15, 60
// minutes: webhooks.retryDelaysMs), each signed `t=<now>,v1=<hmac>` with the app's own secret
// (CPGW_WEBHOOK_SECRET_<APP>), a 2xx within webhooks.deliveryTimeoutMs counting as delivered,
// redirects not followed. A per-record lock keeps two replicas from sending the same attempt.
// Attempts run side by side: an app whose endpoint hangs until the timeout holds up only its
// own deliveries (it used to hold up every other app's, and the next look, for up to 10 s).
// Every wait is on the injected clock. Events are queued by CheckCompletion: through this worker
// (sent at once), or from the check stage, which has no handle on it, through
// storedDeliveryQueue() (written only; sent at the next look of any replica's worker).
//
// What is due is found without reading the records. A record kept 7 days and carries the whole
// event (a dossier: ~100 KB), and the worker looks every second on every replica; it used to
// read every record each time (and saw only the first 10,000, so past that a new event was
// never sent). Now each pending record has a due marker (webhook:due:<check>:<app>, its value
// the next attempt's time and the record's creation), written before the record and moved with
// every attempt; a record that leaves pending gets a done marker (webhook:done:, its final state
// and creation) and loses its due marker. The worker
// lists the due markers and reads a record only when its marker is due. A sweep (the first run
// of a process, then every SWEEP_EVERY_MS) reads only the records with neither marker (an older
// version's) and marks them. A marker that disagrees with its record (a crash between the two
// writes) is put right when it comes due: the record, read under the lock, is the truth.
//
// Must never: deliver an event twice to one app for one check on purpose (a lost acknowledgement
// is the app's duplicate to drop by event id), send without a signature, or wait on real timers.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { getAll } from '../store/state-store.ts';
import type { StateStore } from '../store/store.ts';
import { signatureHeader } from './webhook-signature.ts';

export interface DeliveryAttempt {
  at: number;
  status: number | null;
  error?: string;
}

export interface DeliveryRecord {
  checkId: string;
  app: string;
  url: string;
  eventId: string;
  event: string;
  /**
   * The body as the app receives it (signed as these exact bytes); '' once delivered: a record is
   * kept 7 days for the admin listing, and the event (a dossier, ~100 KB) is not needed after.
   */
  body: string;
  /** X-Service-Delivery: the same on every attempt. */
  delivery: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (ms); null once delivered or failed. */
  nextAt: number | null;
  createdAt: number;
  /** How many attempts were made before the current retry schedule began (a redelivery). */
  scheduleFrom?: number;
}

export interface DeliveryOptions {
  store: StateStore;
  clock: Clock;
  /** Each app's secret by name; an app without one is never sent an unsigned event. */
  secrets: Record<string, string>;
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  intervalMs: number;
  replicaId: string;
  onResult?: (app: string, result: 'delivered' | 'retry' | 'failed' | 'no_secret') => void;
  onError?: (err: unknown) => void;
}

export interface DeliveryOverview {
  pending: number;
  delivered: number;
  failed: number;
  /** Up to the limit asked for, newest first. */
  records: DeliveryRecord[];
}

const RECORD_TTL_MS = 7 * 86_400_000;
const isDue = (r: DeliveryRecord | null, now: number): r is DeliveryRecord =>
  r?.state === 'pending' && (r.nextAt ?? 0) <= now;
const PREFIX = 'webhook:out:';
const DUE = 'webhook:due:';
const DONE = 'webhook:done:';
const recordKey = (checkId: string, app: string) => `${PREFIX}${checkId}:${app}`;
/** `<check>:<app>` of a record, due or done marker key. */
const idOf = (key: string, prefix: string) => key.slice(prefix.length);
/** How often every record without a marker is read (an older version's, or one a crash left unmarked). */
export const SWEEP_EVERY_MS = 15 * 60_000;
/** A due marker whose record is missing is left alone this long (its enqueue may be between the two writes). */
const ORPHAN_GRACE_MS = 60_000;
const LIST_ALL = 10_000_000;
/** Records the sweep reads (and marks) at once. */
const SWEEP_BATCH = 256;

/**
 * A marker's value: `<what>:<createdAt>`, <what> being the next attempt's time (due markers) or
 * the final state (done markers); createdAt orders the admin listing without reading records.
 */
const markerValue = (what: number | string, createdAt: number) => `${what}:${createdAt}`;
const parseMarker = (value: string) => {
  const at = value.indexOf(':');
  const head = at < 0 ? value : value.slice(0, at);
  return { head, createdAt: at < 0 ? 0 : Number(value.slice(at + 1)) || 0 };
};

/** One app's copy of an event, as it is queued. */
export interface QueuedEvent {
  checkId: string;
  app: string;
  url: string;
  event: { id: string; event: string };
  /** The body as the app receives it (signed as these exact bytes). */
  body: string;
}

/** Where check-completion.ts queues events for apps; false when the check was queued for the app. */
export interface DeliveryQueue {
  enqueue(input: QueuedEvent): Promise<boolean>;
}

/**
 * Writes the delivery record (and its due marker first: a record is never without one); false
 * when this check was already queued for the app. A marker already there (queued before) keeps
 * its time; a record already done gets one that its first run clears.
 */
async function queueDelivery(store: StateStore, clock: Clock, input: QueuedEvent): Promise<boolean> {
  const now = clock.now();
  const record: DeliveryRecord = {
    checkId: input.checkId,
    app: input.app,
    url: input.url,
    eventId: input.event.id,
    event: input.event.event,
    body: input.body,
    delivery: randomUUID(),
    state: 'pending',
    attempts: [],
    nextAt: now,
    createdAt: now,
  };
  const id = `${input.checkId}:${input.app}`;
  await store.setIfAbsent(DUE + id, markerValue(now, now), RECORD_TTL_MS);
  return store.setIfAbsent(recordKey(input.checkId, input.app), JSON.stringify(record), RECORD_TTL_MS);
}

/**
 * A queue that only writes: the event goes out at the next look of any replica's worker (within
 * webhooks.workerIntervalMs), not at once. For code that has no handle on this replica's worker:
 * the check stage, which is built from the pipeline's deps.
 */
export function storedDeliveryQueue(store: StateStore, clock: Clock): DeliveryQueue {
  return { enqueue: (input) => queueDelivery(store, clock, input) };
}

export class WebhookDeliveries implements DeliveryQueue {
  /** The listing going on, if any: it resolves with the attempts it found due. */
  private listing: Promise<Promise<void>[]> | null = null;
  /** Attempts under way in this process, by `<check>:<app>` (each under the record's lock). */
  private readonly attempts = new Map<string, Promise<void>>();
  /** When this process last swept the records for ones without a marker (null: not yet). */
  private sweptAt: number | null = null;
  private again = false;
  private readonly stop = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly options: DeliveryOptions) {}

  /** Queues the event for one app and starts sending it; false when the check was queued for it. */
  async enqueue(input: QueuedEvent): Promise<boolean> {
    const added = await queueDelivery(this.options.store, this.options.clock, input);
    if (added) this.kick();
    return added;
  }

  /**
   * For /admin/webhooks: how many deliveries are pending, delivered and failed (from the markers,
   * every one the store holds), and up to `limit` records of the state asked for, newest first.
   * Only the records shown are read (each holds the whole event). A record an older version wrote
   * is counted once the worker's first sweep has marked it (within a run of the worker's start).
   */
  async overview(state?: DeliveryRecord['state'], limit = 100): Promise<DeliveryOverview> {
    const { store } = this.options;
    const [due, done] = await Promise.all([store.keys(DUE, LIST_ALL), store.keys(DONE, LIST_ALL)]);
    const [dueValues, doneValues] = await Promise.all([
      getAll(this.options.store, due),
      getAll(this.options.store, done),
    ]);
    const known = new Map<string, { state: DeliveryRecord['state']; createdAt: number }>();
    due.forEach((k, i) => {
      const value = dueValues[i];
      if (value) known.set(idOf(k, DUE), { state: 'pending', createdAt: parseMarker(value).createdAt });
    });
    // A done marker wins over a due one: done is written first, then due is cleared.
    done.forEach((k, i) => {
      const { head, createdAt } = parseMarker(doneValues[i] ?? '');
      if (head === 'delivered' || head === 'failed') known.set(idOf(k, DONE), { state: head, createdAt });
    });
    const counts = { pending: 0, delivered: 0, failed: 0 };
    const wanted: Array<{ id: string; createdAt: number }> = [];
    for (const [id, m] of known) {
      counts[m.state] += 1;
      if (state === undefined || m.state === state) wanted.push({ id, createdAt: m.createdAt });
    }
    wanted.sort((a, b) => b.createdAt - a.createdAt);
    const read = await getAll(
      this.options.store,
      wanted.slice(0, limit).map((w) => PREFIX + w.id),
    );
    const records = read
      .map((raw) => (raw ? (JSON.parse(raw) as DeliveryRecord) : null))
      .filter((r): r is DeliveryRecord => r !== null && (state === undefined || r.state === state))
      .sort((a, b) => b.createdAt - a.createdAt);
    return { ...counts, records };
  }

  /**
   * Queues the failed deliveries again (an operator's call once an app's endpoint is fixed),
   * those of one app and/or one check when given: each gets the whole retry schedule again, its
   * earlier attempts kept. Returns how many were queued.
   */
  async redeliver(filter: { app?: string; checkId?: string } = {}): Promise<number> {
    const { store, clock, replicaId, timeoutMs } = this.options;
    const done = await store.keys(DONE, LIST_ALL);
    const values = await getAll(this.options.store, done);
    const wanted = done
      .filter((_, i) => parseMarker(values[i] ?? '').head === 'failed')
      .map((k) => idOf(k, DONE))
      .filter((id) => {
        const cut = id.indexOf(':');
        return (
          (filter.checkId === undefined || id.slice(0, cut) === filter.checkId.toLowerCase()) &&
          (filter.app === undefined || id.slice(cut + 1) === filter.app)
        );
      });
    let queued = 0;
    for (const id of wanted) {
      const lock = `webhook:out-lock:${id}`;
      if (!(await store.acquireLock(lock, replicaId, timeoutMs + 5_000))) continue; // being sent
      try {
        const record = await this.read(PREFIX + id);
        if (record?.state !== 'failed') continue;
        record.state = 'pending';
        record.nextAt = clock.now();
        record.scheduleFrom = record.attempts.length;
        // The due marker first (a record pending is never without one), the done marker last.
        await store.set(DUE + id, markerValue(record.nextAt, record.createdAt), RECORD_TTL_MS);
        await store.set(PREFIX + id, JSON.stringify(record), RECORD_TTL_MS);
        await store.set(DONE + id, '', 1);
        queued += 1;
      } finally {
        await store.releaseLock(lock, replicaId).catch(() => undefined);
      }
    }
    if (queued > 0) void this.kick();
    return queued;
  }

  /** Starts the due attempts now; resolves once they (and any already running for them) end. */
  async kick(): Promise<void> {
    await Promise.all(await this.list());
  }

  /**
   * Lists the due markers and starts their attempts, coalesced with a listing already going (which
   * then lists once more). Resolves with the attempts of what was due once the listing is done,
   * without waiting for them: an app whose endpoint hangs until the timeout holds up its own
   * attempts only, never another app's delivery or the next listing.
   */
  private list(): Promise<Promise<void>[]> {
    if (this.listing) {
      this.again = true;
      return this.listing;
    }
    const listing = (async () => {
      const started: Promise<void>[] = [];
      do {
        this.again = false;
        try {
          started.push(...(await this.runDue()));
        } catch (err) {
          this.options.onError?.(err);
        }
      } while (this.again && !this.stop.signal.aborted);
      return started;
    })().finally(() => {
      this.listing = null;
    });
    this.listing = listing;
    return listing;
  }

  /** Looks for due attempts every intervalMs (left behind by a restart, or retries). */
  start(): void {
    if (this.loop) return;
    this.loop = (async () => {
      while (!this.stop.signal.aborted) {
        await this.list();
        await this.options.clock.sleep(this.options.intervalMs, this.stop.signal);
      }
    })();
  }

  /** Stops looking; waits for the attempts under way (each ends within deliveryTimeoutMs). */
  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
    await this.listing;
    await Promise.all(this.attempts.values());
  }

  private async read(key: string): Promise<DeliveryRecord | null> {
    const raw = await this.options.store.get(key);
    return raw ? (JSON.parse(raw) as DeliveryRecord) : null;
  }

  /** The attempts of every due marker: started now, or already under way in this process. */
  private async runDue(): Promise<Promise<void>[]> {
    const { store, clock } = this.options;
    const now = clock.now();
    if (this.sweptAt === null || now - this.sweptAt >= SWEEP_EVERY_MS || now < this.sweptAt) {
      this.sweptAt = now;
      try {
        await this.sweep();
      } catch (error) {
        this.sweptAt = null; // tried again on the next run
        throw error;
      }
    }
    const markers = await store.keys(DUE, LIST_ALL);
    const values = await getAll(this.options.store, markers);
    const claims: Promise<void>[] = [];
    if (this.stop.signal.aborted) return claims;
    markers.forEach((marker, i) => {
      const value = values[i];
      if (!value) return; // gone, or cleared
      const at = Number(parseMarker(value).head);
      if (Number.isFinite(at) && at > clock.now()) return;
      const id = idOf(marker, DUE);
      const under = this.attempts.get(id);
      if (under) {
        claims.push(under);
        return;
      }
      const attempt = this.claim(id).then(() => {
        this.attempts.delete(id);
      });
      this.attempts.set(id, attempt);
      claims.push(attempt);
    });
    return claims;
  }

  /**
   * The attempts of a record whose marker is due, under its lock (another replica may hold it):
   * one, and the next ones while they are due at once (a retry delay of 0). Never throws.
   */
  private async claim(id: string): Promise<void> {
    const { store, replicaId, timeoutMs } = this.options;
    const lock = `webhook:out-lock:${id}`;
    const lockMs = timeoutMs + 5_000;
    try {
      if (!(await store.acquireLock(lock, replicaId, lockMs))) return;
    } catch (err) {
      this.options.onError?.(err);
      return;
    }
    try {
      while ((await this.attempt(id)) && !this.stop.signal.aborted) {
        if (!(await store.renewLock(lock, replicaId, lockMs))) return; // another replica has it now
      }
    } catch (err) {
      this.options.onError?.(err);
    } finally {
      await store.releaseLock(lock, replicaId).catch(() => undefined);
    }
  }

  /**
   * Marks the records no marker names: pending ones get a due marker, the others a done marker
   * (so the next sweep does not read them again). Reads nothing else.
   */
  private async sweep(): Promise<void> {
    const { store } = this.options;
    const [records, due, done] = await Promise.all([
      store.keys(PREFIX, LIST_ALL),
      store.keys(DUE, LIST_ALL),
      store.keys(DONE, LIST_ALL),
    ]);
    const marked = new Set([...due.map((k) => idOf(k, DUE)), ...done.map((k) => idOf(k, DONE))]);
    const unmarked = records.filter((k) => !marked.has(idOf(k, PREFIX)));
    for (let i = 0; i < unmarked.length && !this.stop.signal.aborted; i += SWEEP_BATCH) {
      const batch = unmarked.slice(i, i + SWEEP_BATCH);
      await Promise.all(
        batch.map(async (key) => {
          const record = await this.read(key);
          if (!record) return;
          const id = idOf(key, PREFIX);
          if (record.state === 'pending')
            await store.setIfAbsent(
              DUE + id,
              markerValue(record.nextAt ?? 0, record.createdAt),
              RECORD_TTL_MS,
            );
          else await store.set(DONE + id, markerValue(record.state, record.createdAt), RECORD_TTL_MS);
        }),
      );
    }
  }

  /** Makes the markers say what the record says (the record was just written, or read under the lock). */
  private async mark(id: string, record: DeliveryRecord): Promise<void> {
    const { store } = this.options;
    if (record.state === 'pending') {
      await store.set(DUE + id, markerValue(record.nextAt ?? 0, record.createdAt), RECORD_TTL_MS);
      return;
    }
    await store.set(DONE + id, markerValue(record.state, record.createdAt), RECORD_TTL_MS);
    // The state role has no delete (check-tickets.ts does the same): empty, expiring at once.
    await store.set(DUE + id, '', 1);
  }

  /**
   * One attempt of a due record (re-read under the lock: another replica may have sent it); true
   * when the next one is due at once.
   */
  private async attempt(id: string): Promise<boolean> {
    const { store, clock } = this.options;
    const key = PREFIX + id;
    const record = await this.read(key);
    if (!record) {
      // No record: a marker left behind. Not while an enqueue may be between its two writes.
      const at = Number(parseMarker((await store.get(DUE + id)) ?? '').head);
      if (!Number.isFinite(at) || clock.now() - at > ORPHAN_GRACE_MS) await store.set(DUE + id, '', 1);
      return false;
    }
    if (!isDue(record, clock.now())) {
      await this.mark(id, record); // the marker was behind the record
      return false;
    }
    const secret = this.options.secrets[record.app];
    const entry: DeliveryAttempt = { at: clock.now(), status: null };
    if (!secret) {
      entry.error = 'no secret (set CPGW_WEBHOOK_SECRET_<APP>)';
    } else {
      const outcome = await this.send(record, record.attempts.length + 1, secret);
      entry.status = outcome.status;
      if (outcome.error) entry.error = outcome.error;
    }
    record.attempts.push(entry);
    const ok = entry.status !== null && entry.status >= 200 && entry.status < 300;
    const delay = this.options.retryDelaysMs[record.attempts.length - 1 - (record.scheduleFrom ?? 0)];
    if (ok) {
      record.state = 'delivered';
      record.nextAt = null;
      record.body = '';
    } else if (delay === undefined) {
      record.state = 'failed';
      record.nextAt = null;
    } else {
      record.nextAt = clock.now() + delay;
    }
    await store.set(key, JSON.stringify(record), RECORD_TTL_MS);
    await this.mark(id, record);
    this.options.onResult?.(
      record.app,
      ok ? 'delivered' : !secret ? 'no_secret' : record.state === 'failed' ? 'failed' : 'retry',
    );
    return !ok && delay === 0;
  }

  private async send(
    record: DeliveryRecord,
    attempt: number,
    secret: string,
  ): Promise<{ status: number | null; error?: string }> {
    const { clock, timeoutMs } = this.options;
    const controller = new AbortController();
    const done = new AbortController();
    void clock.sleep(timeoutMs, done.signal).then(() => {
      if (!done.signal.aborted) controller.abort();
    });
    try {
      const response = await fetch(record.url, {
        method: 'POST',
        redirect: 'manual',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'x-service-event': record.event,
          'x-service-event-id': record.eventId,
          'x-service-delivery': record.delivery,
          'x-service-attempt': String(attempt),
          'x-service-signature': signatureHeader([secret], Math.floor(clock.now() / 1000), record.body),
        },
        body: record.body,
      });
      await response.body?.cancel().catch(() => undefined);
      return { status: response.status };
    } catch (err) {
      return { status: null, error: controller.signal.aborted ? 'timeout' : (err as Error).message };
    } finally {
      done.abort();
    }
  }
}
