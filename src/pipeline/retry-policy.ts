// When to try an upstream call again, and after how long: a pure function of the attempt and
// what it returned (reply-from's retryDelay, DESIGN.md "Idempotency keys"). What is retried:
// connection errors and timeouts, 409 idempotency_in_progress (the same key is still executing
// upstream: waited out until the caller's deadline, never given up after a fixed count) and 503
// billing_unavailable (no charge was made). A charged call is only ever retried with its key.
// The loop that sleeps and sends again is the retry stage; this module decides only.
import type { Random } from '../clock.ts';

export type AttemptResult =
  | { kind: 'answer'; status: number; code: string | null; retryAfter: string | undefined }
  | { kind: 'failure'; failure: 'timeout' | 'connection' };

export interface RetryInput {
  /** 0 for the first attempt. */
  attempt: number;
  result: AttemptResult;
  /** Whether sending again is safe: a free call, or a charged call carrying its Idempotency-Key. */
  safe: boolean;
  /** ms left until the request's deadline. */
  remainingMs: number;
  random: Random;
}

/** Attempts for failures and 503s; a 409 in progress is bounded by the deadline alone. */
export const MAX_ATTEMPTS = 6;
const RETRYABLE_CODES = new Set(['idempotency_in_progress', 'billing_unavailable']);

/** Milliseconds to wait before the next attempt, or null: the last result stands. */
export function retryDelay(input: RetryInput): number | null {
  const { attempt, result, safe, remainingMs, random } = input;
  if (!safe) return null;
  let hinted = 0;
  if (result.kind === 'answer') {
    if (!retryableAnswer(result)) return null;
    if (result.retryAfter && /^\d+$/.test(result.retryAfter)) hinted = Number(result.retryAfter) * 1000;
  }
  const inProgress = result.kind === 'answer' && result.code === 'idempotency_in_progress';
  if (!inProgress && attempt + 1 >= MAX_ATTEMPTS) return null;
  const exp = Math.min(2_000, 100 * 2 ** Math.min(attempt, 10));
  const delay = Math.max(hinted, exp / 2 + random() * (exp / 2));
  return delay < remainingMs ? delay : null;
}

function retryableAnswer(result: Extract<AttemptResult, { kind: 'answer' }>): boolean {
  if (result.status !== 409 && result.status !== 503) return false;
  return result.code !== null && RETRYABLE_CODES.has(result.code);
}

/** error.code of a small upstream error body, or null. */
export function errorCodeOf(body: Buffer): string | null {
  if (body.length > 65_536) return null;
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } } | null)?.error?.code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}
