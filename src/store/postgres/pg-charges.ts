// The PostgreSQL money role: each operation one plpgsql function or one conditional statement
// (migrations.ts), so a charge's hold + pending entry, or its claim + ledger row + settle +
// window + pending drop, commit together, durably (synchronous_commit on), on any number of
// replicas. Shares counters with the budget role and cpgw.ledger with the ledger role. The one
// step that does not wait for the WAL flush is the release of an entry estimated 0 that held
// nothing (release_charge sets it for its own transaction: migrations.ts, version 4).
//
// Must never: split one operation over several transactions, compare leases or windows with the
// database's clock (they are the caller's), or shorten a window.
import type { BudgetCounterSpec, ReserveResult } from '../budget-store.ts';
import {
  type ChargeRecord,
  type ChargeStore,
  CLAIM_TTL_MS,
  type CompanyWindows,
  DEFAULT_PENDING_LIMIT,
  DEFAULT_WINDOWS_LIMIT,
  type PendingCharge,
  type RecordResult,
  type WindowKind,
} from '../charge-store.ts';
import { holdSpecs, leaseArgs, pendingOf, recordOf, windowOpeningOf } from '../charge-util.ts';
import { minorOf, reserveResult, uniqueStrings } from '../store-util.ts';
import { reserveParams } from './pg-budgets.ts';
import { ledgerBody } from './pg-ledger.ts';
import type { PgLink } from './pg-link.ts';

/** What stays fixed in a pending entry (stored as jsonb); the lease fields and a later replay key are columns. */
type PendingBody = Omit<PendingCharge, 'owner' | 'leaseUntil' | 'reconcileAttempts'>;

interface PendingRow {
  body: PendingBody;
  owner: string;
  lease_until: string;
  attempts: number;
  replay_key: string | null;
}

const PENDING_COLUMNS = 'body, owner, lease_until, attempts, replay_key';

function entryOf(row: PendingRow): PendingCharge {
  return {
    ...row.body,
    owner: row.owner,
    leaseUntil: Number(row.lease_until),
    reconcileAttempts: Number(row.attempts),
    ...(row.replay_key ? { replayKey: row.replay_key } : {}),
  };
}

function windowsOf(w: (string | number)[]): CompanyWindows {
  return { dossierUntil: Number(w[0] ?? 0), requisitesUntil: Number(w[1] ?? 0) };
}

export class PgCharges implements ChargeStore {
  constructor(private readonly link: PgLink) {}

  async openCharge(p: PendingCharge, counters: BudgetCounterSpec[]): Promise<ReserveResult> {
    const specs = holdSpecs(counters);
    const { owner, leaseUntil, reconcileAttempts: _, ...body } = pendingOf(p, specs);
    const { rows } = await this.link.query<{ r: string[] }>(
      'SELECT cpgw.open_charge($1, $2, $3, $4, $5, $6, $7, $8, $9) AS r',
      [
        body.key,
        minorOf(body.estimateMinor),
        CLAIM_TTL_MS,
        ...reserveParams(specs),
        JSON.stringify(body),
        owner,
        leaseUntil,
      ],
    );
    return reserveResult(rows[0]!.r, specs);
  }

  async renewCharge(key: string, owner: string, leaseUntil: number, replayKey?: string): Promise<boolean> {
    const until = leaseArgs(key, leaseUntil);
    const { rowCount } = await this.link.query(
      `UPDATE cpgw.pending_charges SET lease_until = $3, replay_key = coalesce($4, replay_key)
        WHERE key = $1 AND owner = $2`,
      [key, owner, until, replayKey || null],
    );
    return rowCount === 1;
  }

  async takeOverCharge(
    key: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<PendingCharge | null> {
    const until = leaseArgs(key, leaseUntil);
    // A concurrent take-over waits for the row, then re-checks the lease on the new version.
    const { rows } = await this.link.query<PendingRow>(
      `UPDATE cpgw.pending_charges SET owner = $2, lease_until = $4, attempts = attempts + 1
        WHERE key = $1 AND lease_until <= $3 RETURNING ${PENDING_COLUMNS}`,
      [key, owner, Math.floor(now), until],
    );
    return rows[0] ? entryOf(rows[0]) : null;
  }

  async recordCharge(r: ChargeRecord): Promise<RecordResult> {
    const c = recordOf(r);
    const body = ledgerBody(r.entry);
    const { rows } = await this.link.query<{ r: string[] }>(
      'SELECT cpgw.record_charge($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) AS r',
      [
        c.key,
        c.amount,
        c.ttl,
        r.entry.requestId === undefined || r.entry.requestId === null ? null : String(r.entry.requestId),
        CLAIM_TTL_MS,
        c.at,
        body,
        uniqueStrings(r.counters),
        c.window?.kind ?? null,
        c.window?.until ?? null,
        c.window?.inn ?? null,
      ],
    );
    const [recorded, d, w] = rows[0]!.r;
    return { recorded: Number(recorded) === 1, windows: c.window ? windowsOf([d!, w!]) : null };
  }

  async releaseCharge(key: string): Promise<void> {
    await this.link.query('SELECT cpgw.release_charge($1)', [key]);
  }

  async pendingCharges(limit = DEFAULT_PENDING_LIMIT): Promise<PendingCharge[]> {
    if (limit <= 0) return [];
    const { rows } = await this.link.query<PendingRow>(
      `SELECT ${PENDING_COLUMNS} FROM cpgw.pending_charges ORDER BY at_ms, key COLLATE "C" LIMIT $1`,
      [Math.floor(limit)],
    );
    return rows.map(entryOf);
  }

  async isRecorded(key: string): Promise<boolean> {
    const { rowCount } = await this.link.query(
      'SELECT 1 FROM cpgw.claims WHERE key = $1 AND expires_at > now()',
      [key],
    );
    return rowCount === 1;
  }

  async windows(inn: string): Promise<CompanyWindows> {
    const { rows } = await this.link.query<{ w: string[] }>('SELECT cpgw.read_window($1) AS w', [inn]);
    return windowsOf(rows[0]!.w);
  }

  async openWindow(inn: string, kind: WindowKind, until: number, now: number): Promise<CompanyWindows> {
    const { rows } = await this.link.query<{ w: string[] }>('SELECT cpgw.open_window($1, $2, $3, $4) AS w', [
      inn,
      windowOpeningOf(kind),
      Math.floor(until),
      Math.floor(now),
    ]);
    return windowsOf(rows[0]!.w);
  }

  async listWindows(
    now: number,
    limit = DEFAULT_WINDOWS_LIMIT,
  ): Promise<Array<CompanyWindows & { inn: string }>> {
    if (limit <= 0) return [];
    const { rows } = await this.link.query<{ inn: string; d: string; r: string }>(
      `SELECT inn, dossier_until AS d, requisites_until AS r FROM cpgw.windows
        WHERE ends_at > $1 AND expires_at > now() ORDER BY ends_at LIMIT $2`,
      [Math.floor(now), Math.floor(limit)],
    );
    return rows.map((row) => ({ inn: row.inn, ...windowsOf([row.d, row.r]) }));
  }
}
