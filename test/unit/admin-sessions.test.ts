// Console sessions in memory (src/auth/admin-sessions.ts) on a manual clock: a session lives
// while it is used and ends after 30 idle minutes, sign-out ends it, ids and CSRF tokens are
// random and distinct, the CSRF check wants the exact token, and the cookie reader finds its
// cookie among others.
import { describe, expect, it } from 'vitest';
import {
  AdminSessions,
  cookieValue,
  csrfMatches,
  SESSION_COOKIE,
  SESSION_IDLE_MS,
} from '../../src/auth/admin-sessions.ts';
import { ManualClock } from '../../src/clock.ts';

describe('admin sessions', () => {
  it('lives while used, ends after the idle time, and on delete', () => {
    const clock = new ManualClock();
    const sessions = new AdminSessions(clock);
    const { id } = sessions.create('sha256:aa');
    clock.advance(SESSION_IDLE_MS - 1000);
    expect(sessions.resolve(id)?.tokenHash).toBe('sha256:aa');
    clock.advance(SESSION_IDLE_MS - 1000); // idle time starts again at each use
    expect(sessions.resolve(id)).not.toBeNull();
    clock.advance(SESSION_IDLE_MS + 1);
    expect(sessions.resolve(id)).toBeNull();
    expect(sessions.size).toBe(0);
    const second = sessions.create('sha256:bb');
    expect(sessions.delete(second.id)).toBe(true);
    expect(sessions.resolve(second.id)).toBeNull();
    expect(sessions.resolve('never-issued')).toBeNull();
  });

  it('issues distinct random ids and CSRF tokens; expired sessions are swept on create', () => {
    const clock = new ManualClock();
    const sessions = new AdminSessions(clock, 1000);
    const a = sessions.create('sha256:aa');
    const b = sessions.create('sha256:aa');
    expect(new Set([a.id, b.id, a.csrf, b.csrf]).size).toBe(4);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    clock.advance(1001);
    sessions.create('sha256:cc');
    expect(sessions.size).toBe(1);
  });

  it('checks the CSRF token exactly', () => {
    const sessions = new AdminSessions(new ManualClock());
    const { id, csrf } = sessions.create('sha256:aa');
    const s = sessions.resolve(id)!;
    expect(csrfMatches(s, csrf)).toBe(true);
    expect(csrfMatches(s, undefined)).toBe(false);
    expect(csrfMatches(s, '')).toBe(false);
    expect(csrfMatches(s, `${csrf}x`)).toBe(false);
    expect(csrfMatches(s, csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A'))).toBe(false);
    expect(csrfMatches(s, [csrf, csrf])).toBe(false);
  });

  it('reads its cookie among others', () => {
    expect(cookieValue(`a=1; ${SESSION_COOKIE}=xyz; b=2`, SESSION_COOKIE)).toBe('xyz');
    expect(cookieValue(`x${SESSION_COOKIE}=no`, SESSION_COOKIE)).toBeNull();
    expect(cookieValue(`${SESSION_COOKIE}=`, SESSION_COOKIE)).toBeNull();
    expect(cookieValue(undefined, SESSION_COOKIE)).toBeNull();
  });
});
