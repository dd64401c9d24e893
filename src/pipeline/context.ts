// What one proxied request carries through the pipeline stages. Created by the route
// handler, filled in stage by stage, read by the response writer and the request log line.
import type { AppConfig } from '../config/schema.ts';
import type { IncomingCall, UpstreamRoute } from '../upstream-routes.ts';

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'COALESCED' | 'BYPASS';

export interface RequestContext {
  requestId: string;
  route: UpstreamRoute;
  /** null only on public routes (openapi). */
  app: AppConfig | null;
  call: IncomingCall;
  /** Raw body bytes as the app sent them (POST). */
  rawBody: Buffer | undefined;
  /** Path plus query string, as sent by the app. */
  pathAndQuery: string;
  /** Aborts when the client goes away before the answer is written. */
  signal: AbortSignal;
  /** Filled by later stages, read by the log line and the response headers. */
  cache?: CacheStatus;
  chargedMinor?: number;
  estimateMinor?: number;
  /** ISO time the company's free window ends, when known. */
  windowExpires?: string;
  upstreamMs?: number;
  /** X-Max-Wait-Ms as sent (validated); undefined means the class default. */
  maxWaitMs?: number;
  /** Time spent waiting in the rate queue. */
  queuedMs?: number;
  upstreamAttempts?: number;
}
