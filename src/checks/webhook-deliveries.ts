// The persistent queue of events delivered to apps' webhooks. One record per (check, app) in the
// state store, written before any attempt: a replica that dies leaves it for another (or for its
// own next start). Attempts follow the upstream's schedule (at once, then after 1, 5, 15, 60
// minutes: webhooks.retryDelaysMs), each signed `t=<now>,v1=<hmac>` with the app's own secret
// (CPGW_WEBHOOK_SECRET_<APP>), a 2xx within webhooks.deliveryTimeoutMs counting as delivered,
// redirects not followed. A per-record lock keeps two replicas from sending the same attempt.
// Every wait is on the injected clock.
//
// Must never: deliver an event twice to one app for one check on purpose (a lost acknowledgement
// is the app's duplicate to drop by event id), send without a signature, or wait on real timers.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
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
  /** The body as the app receives it (signed as these exact bytes). */
  body: string;
  /** X-Service-Delivery: the same on every attempt. */
  delivery: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (ms); null once delivered or failed. */
  nextAt: number | null;
  createdAt: number;
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

const RECORD_TTL_MS = 7 * 86_400_000;
const isDue = (r: DeliveryRecord | null, now: number): r is DeliveryRecord =>
  r?.state === 'pending' && (r.nextAt ?? 0) <= now;
const PREFIX = 'webhook:out:';
const recordKey = (checkId: string, app: string) => `${PREFIX}${checkId}:${app}`;

export class WebhookDeliveries {
  private running: Promise<void> | null = null;
  private again = false;
  private readonly stop = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly options: DeliveryOptions) {}

  /** Queues the event for one app; false when this check was already queued for it. */
  async enqueue(input: {
    checkId: string;
    app: string;
    url: string;
    event: { id: string; event: string };
    body: string;
  }): Promise<boolean> {
    const now = this.options.clock.now();
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
    const added = await this.options.store.setIfAbsent(
      recordKey(input.checkId, input.app),
      JSON.stringify(record),
      RECORD_TTL_MS,
    );
    if (added) this.kick();
    return added;
  }

  /** Every record this store holds (newest first), for /admin/webhooks. */
  async list(limit = 1000): Promise<DeliveryRecord[]> {
    const keys = await this.options.store.keys(PREFIX, limit);
    const records = await Promise.all(keys.map((k) => this.read(k)));
    return records.filter((r): r is DeliveryRecord => r !== null).sort((a, b) => b.createdAt - a.createdAt);
  }

  /** Runs due attempts now (coalesced with a run already going). */
  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.runDue().catch((err) => this.options.onError?.(err));
      } while (this.again && !this.stop.signal.aborted);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Looks for due attempts every intervalMs (left behind by a restart, or retries). */
  start(): void {
    if (this.loop) return;
    this.loop = (async () => {
      while (!this.stop.signal.aborted) {
        await this.kick();
        await this.options.clock.sleep(this.options.intervalMs, this.stop.signal);
      }
    })();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
    await this.running;
  }

  private async read(key: string): Promise<DeliveryRecord | null> {
    const raw = await this.options.store.get(key);
    return raw ? (JSON.parse(raw) as DeliveryRecord) : null;
  }

  private async runDue(): Promise<void> {
    const { store, clock, replicaId } = this.options;
    const keys = await store.keys(PREFIX, 10_000);
    const due: Promise<void>[] = [];
    for (const key of keys) {
      if (this.stop.signal.aborted) break;
      const record = await this.read(key);
      if (!isDue(record, clock.now())) continue;
      const lock = `webhook:out-lock:${record.checkId}:${record.app}`;
      if (!(await store.acquireLock(lock, replicaId, this.options.timeoutMs + 5_000))) continue;
      due.push(
        this.attempt(key)
          .catch((err) => this.options.onError?.(err))
          .finally(() => store.releaseLock(lock, replicaId).catch(() => undefined)),
      );
    }
    await Promise.all(due);
  }

  /** One attempt of a due record (re-read under the lock: another replica may have sent it). */
  private async attempt(key: string): Promise<void> {
    const { store, clock } = this.options;
    const record = await this.read(key);
    if (!isDue(record, clock.now())) return;
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
    const delay = this.options.retryDelaysMs[record.attempts.length - 1];
    if (ok) {
      record.state = 'delivered';
      record.nextAt = null;
    } else if (delay === undefined) {
      record.state = 'failed';
      record.nextAt = null;
    } else {
      record.nextAt = clock.now() + delay;
    }
    await store.set(key, JSON.stringify(record), RECORD_TTL_MS);
    this.options.onResult?.(
      record.app,
      ok ? 'delivered' : !secret ? 'no_secret' : record.state === 'failed' ? 'failed' : 'retry',
    );
    if (!ok && delay === 0) this.again = true;
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
