// What a pipeline stage hands back: an Answer (to be written to the app as it is, plus the
// gateway's headers) or a Refusal. A refusal is a plain value from the moment a stage decides
// it until refusals.ts writes it as the upstream's error envelope; only faults are thrown.
import type { ErrorCode } from '../errors.ts';

export interface Answer {
  status: number;
  /** Header names in lower case. The upstream's X-Request-Id is moved to X-Upstream-Request-Id. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface Refusal {
  readonly refusal: true;
  code: ErrorCode;
  /** HTTP status; the catalogue's unless a code has two (upstream_unavailable: 502 or 504). */
  status: number;
  message: string;
  details: Record<string, unknown>;
  headers: Record<string, string>;
  /** The fault behind it, for the log line (never sent to the app). */
  cause?: unknown;
}

export type Outcome = Answer | Refusal;

export function isRefusal(outcome: Outcome): outcome is Refusal {
  return (outcome as Refusal).refusal === true;
}
