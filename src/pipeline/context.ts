// What one proxied request carries through the pipeline stages. The handler creates it with
// the request's raw facts; each fact derived from them (the app, the charge shape, the cache
// policy, the deadline, the company's windows, the check ticket) is computed ONCE by the stage
// that owns it and read by the later ones, the response writer and the request log line.

import type { CachePolicy } from '../cache/cache-keys.ts';
import type { RequestDirectives } from '../cache/index.ts';
import type { CheckTicket } from '../checks/check-tickets.ts';
import type { WakeSignal } from '../clock.ts';
import type { AppConfig } from '../config/schema.ts';
import type { OpenCharge } from '../cost/charge-book.ts';
import type { CompanyWindows } from '../cost/window-tracker.ts';
import type { RequestTrace } from '../ops/tracing.ts';
import type { ChargeShape, IncomingCall, UpstreamRoute } from '../route-table.ts';
import type { CacheStatus, Refusal } from './outcome.ts';
import type { SendConditions } from './send-conditions.ts';

export type { CacheStatus } from './outcome.ts';

export interface RequestContext {
  requestId: string;
  route: UpstreamRoute;
  /** Request headers as received (lower-case names). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  call: IncomingCall;
  /** Raw body bytes as the app sent them (POST). */
  rawBody: Buffer | undefined;
  /** Path plus query string, as sent by the app. */
  pathAndQuery: string;
  /** Aborts when the client goes away before the answer is written (a Waker: no EventTarget per request). */
  signal: WakeSignal;
  /**
   * What the upstream stage waits for before it sends (send-conditions.ts): the lead (coalesce),
   * the store's windows agreeing with a guess (cache), the charge entry (budget). Each is set by
   * its own stage; the order they are judged in is declared in index.ts.
   */
  sendWhen: SendConditions;
  /** The request's trace (src/ops/tracing.ts); absent when tracing is off. */
  trace?: RequestTrace;

  // --- facts, each set once by its stage ---
  /** authenticate: null only on public routes (openapi). */
  app: AppConfig | null;
  /** validate: X-Max-Wait-Ms as sent; undefined means the class default. */
  maxWaitMs?: number;
  /** validate: how the upstream bills this call; null for free routes. */
  shape: ChargeShape | null;
  /** validate: Cache-Control request directives. */
  directives: RequestDirectives;
  /** validate: the cache policy (null: never cached). */
  policy: CachePolicy | null;
  /** validate: absolute deadline (ms) for the whole request: rate-queue wait plus upstream time. */
  deadline: number;
  /** validate: per-attempt upstream timeout. */
  timeoutMs: number;
  /** cache / charge gate: the company's windows as last read. */
  windows?: CompanyWindows;
  /** checks: the ticket of the polled check, when the gateway knows it. */
  ticket?: CheckTicket | null;
  /** charge gate: an open window makes this call free (no lock taken). */
  covered?: boolean;
  /** budget: the charge opened for this call (estimate held, pending entry written). */
  charge?: OpenCharge;
  /**
   * record: a paid call answered before its record (stages/record.ts) sets the record running
   * here; it resolves once the record is applied or queued in the outbox, and never rejects. The
   * charge gate gives the company's lock back only after it.
   */
  settling?: Promise<void>;
  /** idempotency: the key sent upstream with a charged call. */
  idempotencyKey?: string;
  /** upstream: ms (clock) when the first attempt started. */
  startedAt?: number;
  /** retry: the attempt being made (0 = first). */
  attempt?: number;
  /** retry/upstream: the deadline of the attempts once the first started (queue time excluded). */
  callDeadline?: number;

  // --- outcome facts for headers and the log line ---
  /**
   * How the app was served: the stages put these on the outcome they return (outcome.ts Served);
   * the handler copies them here once, when the pipeline has answered.
   */
  cache?: CacheStatus;
  chargedMinor?: number;
  /** ISO time the company's free window ends, when known. */
  windowExpires?: string;
  /** budget: what the call was estimated to cost (X-Cost-Estimate-Minor). */
  estimateMinor?: number;
  upstreamMs?: number;
  /** Time spent waiting in the rate queue. */
  queuedMs?: number;
  upstreamAttempts?: number;
  /** The refusal written to the app, when it was refused (log line, metrics). */
  refusal?: Refusal;
  /** True when an attempt may have reached the upstream but no answer came back. */
  outcomeUnknown?: boolean;
  /** Whether an open window covered this call when it arrived (set by the cache stage). */
  windowCovered?: boolean;
  /** The upstream's X-Request-Id of the answer (log line). */
  upstreamRequestId?: string;
  /** Error envelope code and, for 402/429, why (log line, metrics; set by the error handler). */
  errorCode?: string;
  refusalReason?: string;
  /** What a direct upstream call would have cost more (README "Savings"), and why. */
  savedMinor?: number;
  savedReason?: string;
}
