// The PostgreSQL connection pool the money roles share (`pg`): bounded, every session with
// synchronous_commit on and a statement timeout, and the error mapping: a connection fault,
// a timeout or a server that is shutting down becomes StoreUnavailableError (the gateway answers
// 503 store_unavailable); a deadlock or serialization failure is retried (each operation is one
// statement, so a retry re-runs the whole transaction).
//
// Must never: print or log the connection URL's password, let an idle client's error crash the
// process, or wait for a connection without a bound.
import pg from 'pg';
import { StoreUnavailableError } from '../store.ts';
import { SessionLane } from './pg-lane.ts';

export interface PgLinkOptions {
  /** postgres:// or postgresql:// URL (a password may come from the URL or PGPASSWORD). */
  url: string;
  /** Upper bound of open connections per process. Default 10. */
  poolMax?: number;
  /** A statement (lock waits included) running longer is cancelled. Default 5000 ms. */
  statementTimeoutMs?: number;
  /**
   * Reports a lost connection (once per outage) and a background step that failed otherwise
   * (report()). Default: process.emitWarning.
   */
  onError?: (error: unknown) => void;
}

/** SQLSTATE classes meaning "not now": connection exception, resources, operator intervention, system. */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58']);
/** Access refused (bad password, unknown database or role): the store is unusable as configured. */
const ACCESS_CODES = new Set(['28000', '28P01', '3D000']);
/**
 * Retried: a serialization failure or deadlock (the statement is its own transaction), and a plan
 * a session cached (a plpgsql function's) whose result type a migration changed since (0A000,
 * "cached plan must not change result type"; the failed session is closed, the retry plans anew).
 */
const RETRY_CODES = new Set(['40001', '40P01', '0A000']);

/** The URL with its password replaced, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable postgres URL)';
  }
}

function passwordOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}

/** A message safe to print: every occurrence of the password removed. */
export function scrub(message: string, url: string): string {
  const password = passwordOf(url);
  const plain = process.env.PGPASSWORD;
  let out = message;
  for (const secret of [password, plain]) if (secret) out = out.split(secret).join('***');
  return out;
}

export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || ACCESS_CODES.has(code) || RETRY_CODES.has(code);
  // Node socket errors (ECONNREFUSED, ETIMEDOUT, ...) and pg's own client errors ("Connection
  // terminated", "timeout exceeded when trying to connect", "Query read timeout").
  if (typeof code === 'string') return true;
  const message = error instanceof Error ? error.message : '';
  return /connection|timeout|terminat|not queryable|ended/i.test(message);
}

/** pg-pool's idle time, after which the pool closes an idle session (and the lane gives one back). */
const IDLE_MS = 30_000;

export class PgLink {
  readonly pool: pg.Pool;
  /** Sessions held between statements (pg-lane.ts): a statement goes out on the turn it is asked for. */
  private readonly lane: SessionLane;
  private readonly onError: (error: unknown) => void;
  private down = false;

  constructor(private readonly options: PgLinkOptions) {
    this.onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
    const timeout = options.statementTimeoutMs ?? 5_000;
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolMax ?? 10,
      statement_timeout: timeout,
      // The socket itself: a server that stops answering (network gone) fails the query too.
      query_timeout: timeout + 2_000,
      connectionTimeoutMillis: timeout,
      idleTimeoutMillis: IDLE_MS,
      application_name: 'cpgw',
      options: '-c synchronous_commit=on',
      // Also against a URL's own `options=-c synchronous_commit=off` (which wins over the startup
      // options above): a new session is handed out only once this has finished. A failed SET
      // ends the session and fails the query that was waiting for it, so no money step runs on a
      // session that may not wait for its WAL flush.
      // pg-pool awaits onConnect; a query sent from its 'connect' event instead would run beside
      // the first query of ours on the same session, which pg 8 only queues with a deprecation
      // warning and pg 9 will not do at all.
      onConnect: async (client: pg.ClientBase) => {
        await client.query('SET synchronous_commit = on');
      },
    });
    // An idle client losing its server emits here; without a listener it would crash the process.
    this.pool.on('error', (error) => this.fault(error));
    this.lane = new SessionLane(this.pool, {
      max: options.poolMax ?? 10,
      idleMs: IDLE_MS,
      onError: (error) => this.fault(error),
    });
  }

  /** Sessions held between statements now (tests). */
  get heldSessions(): number {
    return this.lane.sessions;
  }

  /** The URL without its password (messages). */
  get where(): string {
    return redactUrl(this.options.url);
  }

  /** One statement (one transaction), connection trouble as StoreUnavailableError. */
  async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.lane.query<R>({ text, values });
        this.down = false;
        return result;
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        if (RETRY_CODES.has(code) && attempt < 4) continue;
        if (!isUnavailable(error)) throw error;
        this.fault(error);
        throw new StoreUnavailableError(
          `postgres unavailable: ${scrub((error as Error)?.message ?? String(error), this.options.url)}`,
          { cause: error },
        );
      }
    }
  }

  async close(): Promise<void> {
    this.lane.close();
    await this.pool.end();
  }

  /**
   * A background step (`what`) failed: told through onError, the URL scrubbed from the message.
   * Connection trouble is left out: query() reported the outage once already.
   */
  report(what: string, error: unknown): void {
    if (error instanceof StoreUnavailableError) return;
    this.tell(`${what} failed`, error);
  }

  private fault(error: unknown): void {
    if (this.down) return;
    this.down = true;
    this.tell('connection lost', error);
  }

  /** onError with `postgres <what> (<where>): <message>`, the URL's password scrubbed. */
  private tell(what: string, error: unknown): void {
    const message = scrub(error instanceof Error ? error.message : String(error), this.options.url);
    this.onError(new Error(`postgres ${what} (${this.where}): ${message}`));
  }
}
