// The emulator's state objects bundled for the route modules, and the answer type every
// route returns. Types and wiring only; no behaviour lives here.
import type { OffsetClock } from '../clock.ts';
import type { BillingLedger } from './billing-ledger.ts';
import type { CheckRegistry } from './check-registry.ts';
import type { ClockScheduler } from './clock-scheduler.ts';
import type { CoverageWindows } from './coverage-windows.ts';
import type { EmulatorDataSource } from './data-source.ts';
import type { ResolvedConfig } from './emulator-config.ts';
import type { EmulatorModes } from './emulator-modes.ts';
import type { FaultInjector } from './fault-injector.ts';
import type { IdempotencyStore } from './idempotency-store.ts';
import type { KeyRegistry } from './key-registry.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { RequestLog } from './request-log.ts';
import type { WebhookDispatcher } from './webhook-dispatcher.ts';

export interface EmulatorContext {
  config: ResolvedConfig;
  /** The modes in force now (changeable through /_emulator/modes). */
  modes: EmulatorModes;
  clock: OffsetClock;
  scheduler: ClockScheduler;
  data: EmulatorDataSource;
  keys: KeyRegistry;
  billing: BillingLedger;
  windows: CoverageWindows;
  idempotency: IdempotencyStore;
  limiter: RateLimiter;
  faults: FaultInjector;
  requests: RequestLog;
  checks: CheckRegistry;
  webhooks: WebhookDispatcher;
}

/** What a route hands back: a status, a JSON body already serialized, extra headers. */
export interface Answer {
  status: number;
  /** A Buffer for large memoized bodies (the dossier), so nothing is re-encoded per request. */
  body: string | Buffer;
  headers?: Record<string, string>;
}

export function json(status: number, body: unknown, headers?: Record<string, string>): Answer {
  return { status, body: JSON.stringify(body), ...(headers ? { headers } : {}) };
}
