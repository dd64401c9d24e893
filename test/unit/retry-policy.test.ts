// The retry policy alone: a pure function of (attempt, result, safety, time left, random).
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/clock.ts';
import { type AttemptResult, MAX_ATTEMPTS, retryDelay } from '../../src/pipeline/retry-policy.ts';

const answer = (status: number, code: string | null, retryAfter?: string): AttemptResult => ({
  kind: 'answer',
  status,
  code,
  retryAfter,
});
const base = { attempt: 0, safe: true, remainingMs: 30_000, random: seededRandom(7) };

describe('retryDelay', () => {
  it('never retries an unsafe call (charged without a key)', () => {
    expect(retryDelay({ ...base, safe: false, result: { kind: 'failure', failure: 'timeout' } })).toBeNull();
  });

  it('retries transport failures with growing, jittered backoff within [exp/2, exp]', () => {
    const delays = [0, 1, 2, 3].map((attempt) =>
      retryDelay({ ...base, attempt, result: { kind: 'failure', failure: 'connection' } }),
    );
    delays.forEach((d, attempt) => {
      const exp = Math.min(2_000, 100 * 2 ** attempt);
      expect(d).toBeGreaterThanOrEqual(exp / 2);
      expect(d).toBeLessThanOrEqual(exp);
    });
  });

  it('gives up on failures after MAX_ATTEMPTS', () => {
    expect(
      retryDelay({ ...base, attempt: MAX_ATTEMPTS - 1, result: { kind: 'failure', failure: 'timeout' } }),
    ).toBeNull();
  });

  it('waits out 409 idempotency_in_progress past MAX_ATTEMPTS, until the deadline', () => {
    const inProgress = answer(409, 'idempotency_in_progress');
    expect(retryDelay({ ...base, attempt: 20, result: inProgress })).not.toBeNull();
    expect(retryDelay({ ...base, attempt: 20, remainingMs: 500, result: inProgress })).toBeNull();
  });

  it('retries 503 billing_unavailable honouring Retry-After', () => {
    expect(retryDelay({ ...base, result: answer(503, 'billing_unavailable', '3') })).toBe(3_000);
  });

  it('never retries other answers', () => {
    for (const r of [
      answer(200, null),
      answer(404, 'not_found'),
      answer(402, 'insufficient_funds'),
      answer(502, 'source_unavailable'),
      answer(409, 'other'),
    ]) {
      expect(retryDelay({ ...base, result: r })).toBeNull();
    }
  });

  it('does not plan a wait that outlives the deadline', () => {
    expect(
      retryDelay({ ...base, remainingMs: 10, result: { kind: 'failure', failure: 'timeout' } }),
    ).toBeNull();
  });
});
