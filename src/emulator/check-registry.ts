// Fresh checks: creation, collection on the emulator clock, the wait before 202, the
// window that opens when data is ready and the check.completed event. Collection runs
// independently of any HTTP connection. It never charges: the route charges before create().
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { CheckPurpose } from '../domain/requests.ts';
import type { ClockScheduler } from './clock-scheduler.ts';
import type { CoverageWindows } from './coverage-windows.ts';
import type { EmulatorDataSource } from './data-source.ts';
import type { RequisitesCheckWindow } from './emulator-modes.ts';
import { isoMsk, secondsUntil } from './time-format.ts';
import type { WebhookDispatcher } from './webhook-dispatcher.ts';

export interface CheckRecord {
  id: string;
  accountId: number;
  inn: string;
  purpose: CheckPurpose;
  cold: boolean;
  createdAt: number;
  readyAt: number;
  /** The answer body once ready (a dossier, or {found, requisites}). */
  result: string | null;
  found: boolean;
  /** True once the creating request answered 202: completion then sends check.completed. */
  answered202: boolean;
  waiters: Array<() => void>;
}

export interface CheckSettings {
  checkMs: number;
  checkWaitMs: number;
  freshMs: number;
  /** What a finished requisites check does to an open dossier window (asked at completion). */
  requisitesWindow: () => RequisitesCheckWindow;
}

export class CheckRegistry {
  private checks = new Map<string, CheckRecord>();
  /** `inn:purpose` -> until when a finished check keeps the data fresh (a warm check). */
  private freshUntil = new Map<string, number>();
  private baseUrl = '';

  constructor(
    private readonly clock: Clock,
    private readonly scheduler: ClockScheduler,
    private readonly data: EmulatorDataSource,
    private readonly windows: CoverageWindows,
    private readonly webhooks: WebhookDispatcher,
    private readonly settings: CheckSettings,
  ) {}

  setBaseUrl(url: string): void {
    this.baseUrl = url;
  }

  /** Cold = the registers must be queried: no check of this INN finished within freshMs. */
  isCold(inn: string, purpose: CheckPurpose): boolean {
    return (this.freshUntil.get(`${inn}:${purpose}`) ?? Number.NEGATIVE_INFINITY) <= this.clock.now();
  }

  create(accountId: number, inn: string, purpose: CheckPurpose): CheckRecord {
    const now = this.clock.now();
    const cold = this.isCold(inn, purpose);
    const record: CheckRecord = {
      id: randomUUID(),
      accountId,
      inn,
      purpose,
      cold,
      createdAt: now,
      readyAt: now + (cold ? this.settings.checkMs : 0),
      result: null,
      found: false,
      answered202: false,
      waiters: [],
    };
    this.checks.set(record.id, record);
    if (cold) this.scheduler.at(record.readyAt, () => this.complete(record));
    else this.complete(record);
    return record;
  }

  /** Resolves 'ready' when collection finishes within the wait, else 'waiting' (then 202). */
  wait(record: CheckRecord): Promise<'ready' | 'waiting'> {
    if (record.result !== null) return Promise.resolve('ready');
    return new Promise((resolve) => {
      const cancel = this.scheduler.after(this.settings.checkWaitMs, () => {
        if (record.result !== null) return resolve('ready');
        record.answered202 = true;
        resolve('waiting');
      });
      record.waiters.push(() => {
        cancel();
        resolve('ready');
      });
    });
  }

  get(accountId: number, id: string): CheckRecord | null {
    const record = this.checks.get(id);
    return record && record.accountId === accountId ? record : null;
  }

  ticket(record: CheckRecord): Record<string, unknown> {
    return {
      check_id: record.id,
      status: record.result === null ? 'running' : 'succeeded',
      inn: record.inn,
      purpose: record.purpose,
      created_at: isoMsk(record.createdAt),
      poll_url: `${this.baseUrl}/v1/checks/${record.id}`,
      retry_after: this.retryAfter(record),
    };
  }

  retryAfter(record: CheckRecord): number {
    return secondsUntil(this.clock.now(), record.readyAt);
  }

  reset(): void {
    this.checks.clear();
    this.freshUntil.clear();
  }

  private complete(record: CheckRecord): void {
    if (this.checks.get(record.id) !== record) return;
    const at = record.readyAt;
    let data: Record<string, unknown> | null = null;
    if (record.purpose === 'dossier') {
      const json = this.data.dossierJson(record.inn);
      record.found = json !== null;
      record.result = json ?? '{"found":false}';
      if (json !== null && this.webhooks.enabled) data = { dossier: JSON.parse(json) };
    } else {
      const requisites = this.data.requisites(record.inn);
      record.found = requisites !== null;
      record.result = JSON.stringify({ found: record.found, requisites });
      data = { requisites };
    }
    if (record.found) {
      this.windows.openFromCheck(
        record.accountId,
        record.inn,
        record.purpose,
        at,
        this.settings.requisitesWindow(),
      );
      const freshUntil = at + this.settings.freshMs;
      this.freshUntil.set(`${record.inn}:${record.purpose}`, freshUntil);
      if (record.purpose === 'dossier') this.freshUntil.set(`${record.inn}:requisites`, freshUntil);
    }
    for (const waiter of record.waiters.splice(0)) waiter();
    if (record.answered202) {
      this.webhooks.send('check.completed', {
        check_id: record.id,
        inn: record.inn,
        found: record.found,
        ...(record.purpose === 'dossier' ? { dossier: data?.dossier ?? { found: false } } : data),
        dossier_url: `${this.baseUrl}/v1/checks/${record.id}`,
      });
    }
  }
}
