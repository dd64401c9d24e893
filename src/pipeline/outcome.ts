// What a pipeline stage hands back: an Answer (to be written to the app as it is, plus the
// gateway's headers), a Refusal, or Unsent (nothing went upstream and nothing is answered yet).
// Each is a plain value from the moment a stage decides it until the handler writes it; only
// faults are thrown. How the app was served (X-Cache, what this call cost, when the company's
// window ends) travels on the outcome too: the stage that knows sets it on the value it returns,
// and the handler (index.ts) copies it onto the context once, for the headers, the log line and
// the metrics.
import type { ErrorCode } from '../errors.ts';
import { copyOf } from '../object-copy.ts';

/** X-Cache. DERIVED: a section read answered from the company's cached dossier (stages/derive.ts). */
export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'COALESCED' | 'BYPASS' | 'DERIVED';

/** How the app was served, as the stages that know put it on the outcome. */
export interface Served {
  /** X-Cache: set by the stage that served it (cache, checks, coalesce, derive, local answers). */
  cache?: CacheStatus;
  /** What THIS call cost (X-Charged-Minor): the record stage's; 0 for anything served without a call. */
  chargedMinor?: number;
  /** ISO time the company's free window ends, when known (X-Window-Expires). */
  windowExpires?: string;
}

export interface Answer extends Served {
  status: number;
  /** Header names in lower case. The upstream's X-Request-Id is moved to X-Upstream-Request-Id. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface Refusal extends Served {
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

/**
 * Why a call was not sent (send-conditions.ts): a condition of the send said no, or the client
 * went away while the call waited in the rate queue. The stage that owns the condition acts on
 * it (coalesce follows the leader, cache starts over from the store's windows, budget answers
 * its refusal); only `client_gone` reaches the handler, which has nobody to write to.
 */
export type UnsentWhy = 'not_leader' | 'windows_disagree' | 'charge_not_opened' | 'client_gone';

export interface Unsent {
  readonly unsent: true;
  why: UnsentWhy;
}

export type Outcome = Answer | Refusal | Unsent;

export function isRefusal(outcome: Outcome): outcome is Refusal {
  return (outcome as Refusal).refusal === true;
}

export function isUnsent(outcome: Outcome): outcome is Unsent {
  return (outcome as Unsent).unsent === true;
}

export function isAnswer(outcome: Outcome): outcome is Answer {
  return !isRefusal(outcome) && !isUnsent(outcome);
}

export function unsent(why: UnsentWhy): Unsent {
  return { unsent: true, why };
}

/**
 * The outcome with the facts given filled in where a deeper stage left them unset (a deeper
 * stage knows more: the record stage's window beats the cache stage's look before the call).
 * Unsent is returned as it is.
 */
export function servedWith<T extends Outcome>(outcome: T, facts: Served): T {
  if (isUnsent(outcome)) return outcome;
  const o = outcome as Answer | Refusal;
  let out: Answer | Refusal | undefined;
  for (const key of ['cache', 'chargedMinor', 'windowExpires'] as const) {
    if (facts[key] === undefined || o[key] !== undefined) continue;
    out ??= copyOf(o);
    (out as Served)[key] = facts[key] as never;
  }
  return (out ?? o) as T;
}
