// Delivers signed webhook events (check.completed) to the configured address: one
// `t=...,v1=...` signature per secret over `t.body`, a handler timeout, redirects not
// followed, and retries on the spec's schedule driven by the emulator clock. The `t=` of the
// signature comes from the signing clock (the real one by default, so a receiver's 300 s
// tolerance holds after the emulator clock was moved). The event id and delivery number never
// change between attempts. It never blocks an API answer.
import { createHmac, randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { ClockScheduler } from './clock-scheduler.ts';
import { isoMsk } from './time-format.ts';

export interface WebhookSettings {
  url: string | null;
  secrets: string[];
  timeoutMs: number;
  /** Delays before attempts 2..n (ms of emulator time after the previous failure). */
  retryDelaysMs: number[];
  /** The clock whose time goes into `t=` (asked at every attempt: the mode can change). */
  signingClock?: () => Clock;
}

export interface AttemptRecord {
  attempt: number;
  at: string;
  status: number | null;
  error?: string;
}

export interface DeliveryRecord {
  event_id: string;
  event: string;
  delivery: number;
  url: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: AttemptRecord[];
  next_attempt_at: string | null;
}

/** Builds the `X-Service-Signature` value: `t=<unix>,v1=<hex>[,v1=<hex>]`. */
export function signWebhook(secrets: string[], timestamp: number, body: string): string {
  const parts = [`t=${timestamp}`];
  for (const secret of secrets) {
    parts.push(`v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`);
  }
  return parts.join(',');
}

export class WebhookDispatcher {
  private records: DeliveryRecord[] = [];
  private nextDelivery = new Map<string, number>();
  private inFlight = new Set<AbortController>();
  private closed = false;

  constructor(
    private readonly clock: Clock,
    private readonly scheduler: ClockScheduler,
    private readonly settings: WebhookSettings,
  ) {}

  /** A new subscribed address (null: none) and, when given, new signing secrets. */
  retarget(url: string | null, secrets?: string[]): void {
    this.settings.url = url;
    if (secrets) this.settings.secrets = [...secrets];
  }

  get enabled(): boolean {
    return this.settings.url !== null;
  }

  /** Queues an event; the first attempt starts at once. Returns the event id (null when no address). */
  send(event: string, data: Record<string, unknown>): string | null {
    const url = this.settings.url;
    if (url === null || this.closed) return null;
    const id = randomUUID();
    const body = JSON.stringify({ id, event, created_at: isoMsk(this.clock.now()), data });
    const delivery = (this.nextDelivery.get(url) ?? 0) + 1;
    this.nextDelivery.set(url, delivery);
    const record: DeliveryRecord = {
      event_id: id,
      event,
      delivery,
      url,
      state: 'pending',
      attempts: [],
      next_attempt_at: isoMsk(this.clock.now()),
    };
    this.records.push(record);
    void this.attempt(record, body);
    return id;
  }

  deliveries(): DeliveryRecord[] {
    return this.records.map((r) => ({ ...r, attempts: [...r.attempts] }));
  }

  reset(): void {
    for (const controller of this.inFlight) controller.abort();
    this.records = [];
    this.nextDelivery.clear();
  }

  close(): void {
    this.closed = true;
    for (const controller of this.inFlight) controller.abort();
  }

  private async attempt(record: DeliveryRecord, body: string): Promise<void> {
    if (this.closed || !this.records.includes(record)) return;
    const attempt = record.attempts.length + 1;
    const timestamp = Math.floor((this.settings.signingClock?.() ?? this.clock).now() / 1000);
    const entry: AttemptRecord = { attempt, at: isoMsk(this.clock.now()), status: null };
    record.attempts.push(entry);
    record.next_attempt_at = null;
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(new Error('handler timeout')), this.settings.timeoutMs);
    try {
      const response = await fetch(record.url, {
        method: 'POST',
        redirect: 'manual',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'x-service-event': record.event,
          'x-service-event-id': record.event_id,
          'x-service-delivery': String(record.delivery),
          'x-service-attempt': String(attempt),
          'x-service-signature': signWebhook(this.settings.secrets, timestamp, body),
        },
        body,
      });
      entry.status = response.status;
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 200 && response.status < 300) {
        record.state = 'delivered';
        return;
      }
    } catch (error) {
      entry.error = controller.signal.aborted ? 'timeout' : (error as Error).message;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    this.retry(record, body, attempt);
  }

  private retry(record: DeliveryRecord, body: string, attempt: number): void {
    if (this.closed || !this.records.includes(record)) return;
    const delay = this.settings.retryDelaysMs[attempt - 1];
    if (delay === undefined) {
      record.state = 'failed';
      return;
    }
    const dueAt = this.clock.now() + delay;
    record.next_attempt_at = isoMsk(dueAt);
    this.scheduler.at(dueAt, () => void this.attempt(record, body));
  }
}
