// The embedded money database: one SQLite file, <stateDir>/money.db, opened through
// node-sqlite3-wasm (SQLite compiled to WebAssembly, file I/O through node:fs, so the same
// install runs on every Node version without a native addon). Each money operation is one
// transaction (BEGIN IMMEDIATE ... COMMIT), and a commit returns only after fsync: WAL journal,
// synchronous=FULL. The database is the process's own (state-lock.ts, and SQLite's exclusive
// locking mode), so the WAL index lives in process memory and no other process reads the file.
//
// Must never: acknowledge a write before it is on disk, open a file another running process
// owns, open a schema newer than it knows, or leave a transaction open after an error.
import { mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { StoreUnavailableError } from '../store.ts';
import { acquireStateLock, type StateLock } from './state-lock.ts';

type Sqlite = typeof import('node-sqlite3-wasm');
type Database = InstanceType<Sqlite['Database']>;
type Statement = ReturnType<Database['prepare']>;
export type Row = Record<string, number | bigint | string | Uint8Array | null>;
export type Param = number | string | null;

export const MONEY_DB_FILE = 'money.db';

/** The schema this code writes; a file with a higher user_version is refused. */
export const SCHEMA_VERSION = 2;

const SCHEMA_V1 = `
CREATE TABLE counters (
  key TEXT PRIMARY KEY,
  spent INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE holds (
  counter TEXT NOT NULL,
  id TEXT NOT NULL,
  amount INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (counter, id)
) WITHOUT ROWID;
CREATE TABLE ledger (
  ms INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (ms, seq)
) WITHOUT ROWID;
CREATE TABLE claims (
  key TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE pending (
  key TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  entry TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX pending_by_at ON pending (at, key);
CREATE TABLE windows (
  inn TEXT PRIMARY KEY,
  dossier_until INTEGER NOT NULL,
  requisites_until INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
`;

// Version 2: what finance sets at run time (finance/sqlite-finance-store.ts): budget overrides,
// the settings version, and the admin audit trail, in the money file so they survive what money
// survives (a restart, a kill -9).
const SCHEMA_V2 = `
CREATE TABLE budget_settings (
  scope TEXT NOT NULL,
  period TEXT NOT NULL,
  source TEXT NOT NULL,
  limit_minor INTEGER,
  soft_minor INTEGER,
  version INTEGER NOT NULL,
  updated_by TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (scope, period)
) WITHOUT ROWID;
CREATE TABLE finance_settings (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  version INTEGER NOT NULL
);
INSERT INTO finance_settings (one, version) VALUES (1, 0);
CREATE TABLE audit (
  ms INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (ms, seq)
) WITHOUT ROWID;
`;

let sqlite: Sqlite | null = null;
/** Loaded on first open: compiling the 1.3 MB WebAssembly module is only paid when it is used. */
function load(): Sqlite {
  sqlite ??= createRequire(import.meta.url)('node-sqlite3-wasm') as Sqlite;
  return sqlite;
}

export class MoneyDb {
  readonly path: string;
  private readonly db: Database;
  private readonly lock: StateLock;
  private readonly statements = new Map<string, Statement>();
  private closed = false;

  /** Opens (creating when absent) <dir>/money.db; throws a one-line Error when it cannot. */
  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.path = join(resolve(dir), MONEY_DB_FILE);
    this.lock = acquireStateLock(dir, `the money database ${this.path}`);
    try {
      // The WebAssembly VFS locks with a directory beside the file; one left by a killed process is
      // stale now that this process holds the state lock (SQLite would call the file busy forever).
      rmSync(`${this.path}.lock`, { recursive: true, force: true });
      this.db = new (load().Database)(this.path);
      this.configure();
    } catch (err) {
      this.lock.release();
      throw err;
    }
  }

  private configure(): void {
    try {
      const mode = (q: string) => Object.values(this.db.all(q)[0] ?? {})[0];
      if (mode('PRAGMA locking_mode=EXCLUSIVE') !== 'exclusive') throw new Error('exclusive locking refused');
      if (mode('PRAGMA journal_mode=WAL') !== 'wal') throw new Error('WAL journal refused');
      this.db.exec('PRAGMA synchronous=FULL');
      if (mode('PRAGMA synchronous') !== 2) throw new Error('synchronous=FULL refused');
      const version = Number(mode('PRAGMA user_version'));
      if (version > SCHEMA_VERSION) {
        throw new Error(
          `${this.path} has schema version ${version}, newer than this cpgw knows (${SCHEMA_VERSION}): run the newer version`,
        );
      }
      if (version < SCHEMA_VERSION) {
        this.tx(() => {
          if (version < 1) this.db.exec(SCHEMA_V1);
          if (version < 2) this.db.exec(SCHEMA_V2);
          this.db.exec(`PRAGMA user_version=${SCHEMA_VERSION}`);
        });
      }
    } catch (err) {
      try {
        this.db.close();
      } catch {}
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(why.includes(this.path) ? why : `cannot open ${this.path}: ${why}`, { cause: err });
    }
  }

  /** Runs `fn` as one transaction, committed durably; rolls back and rethrows on any error. */
  tx<T>(fn: () => T): T {
    this.assertOpen();
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      throw this.fault(err);
    }
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      if (this.db.inTransaction) {
        try {
          this.db.exec('ROLLBACK');
        } catch {}
      }
      throw this.fault(err);
    }
  }

  all(sql: string, params: Param[] = []): Row[] {
    try {
      return this.statement(sql).all(params) as Row[];
    } catch (err) {
      throw this.fault(err);
    }
  }

  get(sql: string, params: Param[] = []): Row | null {
    try {
      // all(), not get(): get() leaves the statement mid-step, which keeps a read open on the WAL.
      return (this.statement(sql).all(params)[0] as Row | undefined) ?? null;
    } catch (err) {
      throw this.fault(err);
    }
  }

  run(sql: string, params: Param[] = []): number {
    try {
      return this.statement(sql).run(params).changes;
    } catch (err) {
      throw this.fault(err);
    }
  }

  /** Throws when the database cannot answer a read (readiness). */
  ping(): void {
    this.get('SELECT 1 AS one');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      // finalize() reports a statement's last failure again (an aborted insert): not a close fault.
      for (const s of this.statements.values()) {
        try {
          s.finalize();
        } catch {}
      }
      this.statements.clear();
      this.db.close();
    } finally {
      this.lock.release();
    }
  }

  private statement(sql: string): Statement {
    this.assertOpen();
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreUnavailableError(`money database ${this.path} is closed`);
  }

  /** SQLite's own failures (disk full, I/O) are the store being unavailable; argument errors pass. */
  private fault(err: unknown): unknown {
    if (err instanceof RangeError || err instanceof StoreUnavailableError) return err;
    if (err instanceof Error && err.name === 'SQLite3Error') {
      return new StoreUnavailableError(`money database: ${err.message}`, { cause: err });
    }
    return err;
  }
}
