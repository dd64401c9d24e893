// Reads what an upstream answer says about the limits: the key's allotment
// (X-RateLimit-Limit), what is left of the upstream's current minute (X-RateLimit-Remaining,
// X-RateLimit-Reset in Unix seconds) and, on a 429 `rate_limited`, how long to back off
// (Retry-After in SECONDS, or an HTTP date).
//
// Pure parsing: the caller passes the time. Must never act on what it reads (the governor does)
// nor treat a 429 `quota_exceeded` (a tariff quota, not a rate) as a rate signal.

export interface UpstreamSignals {
  /** X-RateLimit-Limit: the key's calls per minute. */
  keyLimit?: number;
  /** X-RateLimit-Remaining with its X-RateLimit-Reset, as an absolute time (ms). */
  keyRemaining?: { remaining: number; resetAtMs: number };
  /** 429 rate_limited: pause for this long. */
  pauseMs?: number;
}

export interface SignalOptions {
  /** Pause when a 429 rate_limited comes without a usable Retry-After. */
  fallbackPauseMs: number;
  /** Longest pause a header may impose (a garbage header must not stop the gateway for a day). */
  maxPauseMs: number;
  /** Longest time ahead a Reset may lie (one upstream minute). */
  maxResetAheadMs: number;
}

/** `lower` as most clients name it (undici and node:http give lower-case names), else any case. */
function header(headers: Record<string, string | undefined>, lower: string): string | undefined {
  const direct = headers[lower];
  if (direct !== undefined) return direct;
  for (const k in headers) if (k.toLowerCase() === lower) return headers[k];
  return undefined;
}

function nonNegativeInt(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Retry-After as ms from now: delta seconds (decimals tolerated) or an HTTP date. */
export function retryAfterMs(text: string | undefined, now: number): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

export function readUpstreamSignals(
  status: number,
  headers: Record<string, string | undefined>,
  now: number,
  options: SignalOptions,
  errorCode?: string,
): UpstreamSignals {
  const out: UpstreamSignals = {};
  const limit = nonNegativeInt(header(headers, 'x-ratelimit-limit'));
  if (limit !== undefined && limit > 0) out.keyLimit = limit;

  const remaining = nonNegativeInt(header(headers, 'x-ratelimit-remaining'));
  const reset = nonNegativeInt(header(headers, 'x-ratelimit-reset'));
  if (remaining !== undefined && reset !== undefined) {
    // Unix seconds per the spec; a small number can only be a delta and is read as one.
    const resetAtMs = reset >= 1_000_000_000 ? reset * 1000 : now + reset * 1000;
    if (resetAtMs > now) {
      out.keyRemaining = { remaining, resetAtMs: Math.min(resetAtMs, now + options.maxResetAheadMs) };
    }
  }

  if (status === 429 && (errorCode === undefined || errorCode === 'rate_limited')) {
    const wait = retryAfterMs(header(headers, 'retry-after'), now);
    const pause = wait === undefined || wait <= 0 ? options.fallbackPauseMs : wait;
    out.pauseMs = Math.min(pause, options.maxPauseMs);
  }
  return out;
}
