// The PostgreSQL budget role: counters and holds in cpgw.counters / cpgw.holds, every step one
// plpgsql function (migrations.ts) that locks the counters it touches in key order, so any number
// of replicas share one cap with no lost update. Hold expiry uses the database clock.
//
// Must never: hold on some counters and not others, or decide budget policy (callers do).
import type {
  BudgetCounterSpec,
  BudgetStore,
  CounterState,
  ReserveRequest,
  ReserveResult,
} from '../budget-store.ts';
import { minorOf, reserveResult, ttlOf, uniqueCounters, uniqueStrings } from '../store-util.ts';
import type { PgLink } from './pg-link.ts';

/** The reserve arguments after the id: amount, holdMs, keys, limits (null = none), ttls. */
export function reserveParams(specs: BudgetCounterSpec[]): [string[], (number | null)[], number[]] {
  return [
    specs.map((s) => s.key),
    specs.map((s) => (s.limitMinor === null ? null : minorOf(s.limitMinor))),
    specs.map((s) => ttlOf(s.ttlMs)),
  ];
}

export class PgBudgets implements BudgetStore {
  constructor(private readonly link: PgLink) {}

  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const amount = minorOf(request.amountMinor);
    const holdMs = ttlOf(request.holdMs, 'holdMs');
    const specs = uniqueCounters(request.counters);
    const params = reserveParams(specs);
    if (specs.length === 0) return { ok: true };
    const { rows } = await this.link.query<{ r: string[] }>(
      'SELECT cpgw.reserve($1, $2, $3, $4, $5, $6) AS r',
      [request.id, amount, holdMs, ...params],
    );
    return reserveResult(rows[0]!.r, specs);
  }

  async settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void> {
    await this.settleFn(id, counterKeys, minorOf(actualMinor, 'actualMinor'), ttlOf(ttlMs));
  }

  async release(id: string, counterKeys: string[]): Promise<void> {
    await this.settleFn(id, counterKeys, null, 1);
  }

  async addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void> {
    await this.settleFn(null, counterKeys, minorOf(amountMinor), ttlOf(ttlMs));
  }

  async readCounters(keys: string[]): Promise<CounterState[]> {
    if (keys.length === 0) return [];
    const { rows } = await this.link.query<{ key: string; spent: string; held: string }>(
      `SELECT k.key,
              CASE WHEN c.expires_at > now() THEN c.spent_minor ELSE 0 END AS spent,
              CASE WHEN c.expires_at > now() THEN coalesce(
                (SELECT sum(h.amount_minor) FROM cpgw.holds h
                  WHERE h.counter_key = k.key AND h.expires_at > now()), 0) ELSE 0 END AS held
         FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i)
         LEFT JOIN cpgw.counters c ON c.key = k.key
        ORDER BY k.i`,
      [keys],
    );
    return rows.map((r) => ({ key: r.key, spentMinor: Number(r.spent), reservedMinor: Number(r.held) }));
  }

  private async settleFn(id: string | null, keys: string[], amount: number | null, ttl: number) {
    const unique = uniqueStrings(keys);
    if (unique.length === 0) return;
    await this.link.query('SELECT cpgw.settle($1, $2, $3, $4)', [id, unique, amount, ttl]);
  }
}
