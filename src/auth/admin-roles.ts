// Who may do what on the admin API: the named admin tokens (config admin.tokens, plus the older
// admin.tokenHash / previousTokenHash as an `admin` named "admin"), their roles, and the one table
// of rights per role. authorizeAdmin() answers the caller as a value (name and role) or throws the
// refusal: 404 when no admin token is configured, 401 for an unknown token, 403
// feature_unavailable for a role without the right. A console session cookie (admin-sessions.ts)
// stands for the token it was made from, with the same rights; a write (any method but GET, HEAD
// or OPTIONS) with a session also needs that session's CSRF token (else 403, nothing done).
//
// Must never: compare tokens in anything but constant time (tokens.ts matchToken), or put a token
// or its hash into an error, a log line or the audit trail (only the token's name and role).
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../errors.ts';
import {
  type AdminSessions,
  CSRF_HEADER,
  cookieValue,
  csrfMatches,
  SESSION_COOKIE,
} from './admin-sessions.ts';
import { bearerToken, matchToken } from './tokens.ts';

export const ADMIN_ROLES = ['admin', 'finance', 'viewer'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];

/** Each admin action and the roles allowed it (README "Admin roles" carries the same table). */
export const ADMIN_RIGHTS = {
  /** Every GET: budgets, ledger, audit, limits, windows, cache stats, webhooks, apps, the document. */
  read: ['admin', 'finance', 'viewer'],
  /** PUT / DELETE /admin/budgets/{app}/{period}. */
  budgets_write: ['admin', 'finance'],
  /** POST /admin/reconcile. */
  reconcile: ['admin', 'finance'],
  /** POST /admin/prices/refresh (re-reads the price table; the money figures depend on it). */
  prices_refresh: ['admin', 'finance'],
  /** DELETE /admin/cache/{inn}. */
  cache_purge: ['admin'],
  /** POST /admin/reload. */
  reload: ['admin'],
  /** POST /admin/webhooks/redeliver. */
  webhooks_redeliver: ['admin'],
} as const satisfies Record<string, readonly AdminRole[]>;

export type AdminRight = keyof typeof ADMIN_RIGHTS;

export interface AdminPrincipal {
  name: string;
  role: AdminRole;
}

interface AdminTokenEntry extends AdminPrincipal {
  tokenHash: string;
}

export interface AdminAuthConfig {
  tokenHash: string | null;
  previousTokenHash: string | null;
  tokens: ReadonlyArray<{ name: string; role: AdminRole; tokenHash: string }>;
}

/** Every accepted admin token hash with its name and role (the older single hash: "admin", admin). */
export function adminTokenEntries(config: AdminAuthConfig): AdminTokenEntry[] {
  const entries: AdminTokenEntry[] = config.tokens.map((t) => ({ ...t }));
  for (const hash of [config.tokenHash, config.previousTokenHash])
    if (hash !== null) entries.push({ name: 'admin', role: 'admin', tokenHash: hash });
  return entries;
}

/** True when `role` holds `right`. */
export function roleAllows(role: AdminRole, right: AdminRight): boolean {
  return (ADMIN_RIGHTS[right] as readonly AdminRole[]).includes(role);
}

/** What authorizeAdmin reads of a request; `server.adminSessions` when the console is on. */
export interface AdminRequest {
  headers: IncomingHttpHeaders;
  method: string;
  server?: { adminSessions?: AdminSessions };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The token entry a console session cookie stands for (bearer absent), or the refusal. */
function sessionEntry(request: AdminRequest, entries: AdminTokenEntry[]): AdminTokenEntry | null {
  const sessions = request.server?.adminSessions;
  const id = sessions ? cookieValue(request.headers.cookie, SESSION_COOKIE) : null;
  if (!sessions || !id) return null;
  const session = sessions.resolve(id);
  if (!session) throw new ApiError('unauthorized', {}, 'The console session has ended; sign in again');
  const entry = entries.find((e) => e.tokenHash === session.tokenHash);
  if (!entry) {
    sessions.delete(id);
    throw new ApiError('unauthorized', {}, 'The token of this session is no longer accepted; sign in again');
  }
  if (!SAFE_METHODS.has(request.method.toUpperCase()) && !csrfMatches(session, request.headers[CSRF_HEADER]))
    throw new ApiError(
      'feature_unavailable',
      { csrf: request.headers[CSRF_HEADER] === undefined ? 'missing' : 'mismatch' },
      'A write with a console session needs its X-CSRF-Token header',
    );
  return entry;
}

/**
 * The caller of an admin route, or the refusal (thrown ApiError) when it may not do `right`.
 * Given the request: its bearer token, else its console session cookie (with CSRF on writes).
 */
export function authorizeAdmin(
  from: string | undefined | AdminRequest,
  config: AdminAuthConfig,
  right: AdminRight,
): AdminPrincipal {
  const entries = adminTokenEntries(config);
  if (entries.length === 0)
    throw new ApiError('not_found', {}, 'The admin API is disabled (set admin.tokens or admin.tokenHash)');
  const request = typeof from === 'object' ? from : undefined;
  const token = bearerToken(typeof from === 'object' ? from.headers.authorization : from);
  const found = token ? matchToken(token, entries) : request ? sessionEntry(request, entries) : null;
  if (!found) throw new ApiError('unauthorized');
  if (!roleAllows(found.role, right))
    throw new ApiError(
      'feature_unavailable',
      { role: found.role, right, allowed_roles: ADMIN_RIGHTS[right] },
      `The ${found.role} role may not do this (${right})`,
    );
  return { name: found.name, role: found.role };
}
