// Console sessions: a named admin token exchanged once (POST /console/session) for a random
// session id kept in this process's memory (a Map with idle expiry), with its own CSRF token.
// The admin API resolves the session cookie here, in authorizeAdmin (admin-roles.ts), to the
// token's identity as the config holds it now: a token removed or re-roled by a reload ends or
// changes its sessions at once.
//
// Must never: keep the token itself (only its SHA-256 hash, to find its config entry again),
// accept an expired session, or put a session id or CSRF token into a log line or an error.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';

/** The cookie that carries the session id (HttpOnly, SameSite=Strict, Path=/). */
export const SESSION_COOKIE = 'cpgw_console';
/** The request header a console write carries its session's CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';
/** A session unused this long is gone (each use starts the time again). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** At most this many live sessions per process; the least recently used goes first. */
const MAX_SESSIONS = 10_000;

export interface AdminSession {
  /** The token's hash as config holds it (never the token). */
  tokenHash: string;
  csrf: string;
  lastUsed: number;
}

export class AdminSessions {
  // Insertion order = least recently used first (a touch re-inserts).
  private readonly sessions = new Map<string, AdminSession>();

  constructor(
    private readonly clock: Clock,
    readonly idleMs: number = SESSION_IDLE_MS,
  ) {}

  /** A new session for the token with this hash: its id (for the cookie) and CSRF token. */
  create(tokenHash: string): { id: string; csrf: string } {
    this.sweep();
    while (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value as string;
      this.sessions.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    this.sessions.set(id, { tokenHash, csrf, lastUsed: this.clock.now() });
    return { id, csrf };
  }

  /** The live session with this id (its idle time starts again), or null when none or expired. */
  resolve(id: string): AdminSession | null {
    const session = this.sessions.get(id);
    if (!session) return null;
    const now = this.clock.now();
    if (now - session.lastUsed > this.idleMs) {
      this.sessions.delete(id);
      return null;
    }
    session.lastUsed = now;
    this.sessions.delete(id);
    this.sessions.set(id, session);
    return session;
  }

  /** Ends a session (sign-out, or its token is gone). */
  delete(id: string): boolean {
    return this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [id, s] of this.sessions) if (now - s.lastUsed > this.idleMs) this.sessions.delete(id);
  }
}

/** True when the presented CSRF token is the session's (constant time). */
export function csrfMatches(session: AdminSession, presented: string | string[] | undefined): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie in a Cookie header, or null. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}
