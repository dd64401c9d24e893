// The Redis store's money role: one Lua script per operation (money-scripts.ts), every key under
// the `{money}` hash tag, sharing counters with the budget role and the stream with the ledger
// role, so /admin/budgets and /admin/ledger see what recordCharge wrote.
//
// Must never: split one operation over several round trips, or compare leases with Redis time.
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
import { minorOf, reserveResult } from '../store-util.ts';
import type { RedisLink } from './link.ts';
import {
  LIST_WINDOWS,
  OPEN_CHARGE,
  OPEN_WINDOW,
  PENDING_CHARGES,
  RECORD_CHARGE,
  RELEASE_CHARGE,
  RENEW_CHARGE,
  TAKE_OVER_CHARGE,
} from './money-scripts.ts';
import { counterKeys, reserveArgs } from './redis-budgets.ts';
import { ledgerBody } from './redis-ledger.ts';

/** What stays fixed in a pending entry (stored as JSON); the lease fields are kept apart. */
type PendingBody = Omit<PendingCharge, 'owner' | 'leaseUntil' | 'reconcileAttempts'>;

function entryOf(
  j: string,
  owner: string,
  leaseUntil: string | number,
  attempts: string | number,
  replayKey?: string | null,
): PendingCharge {
  return {
    ...(JSON.parse(j) as PendingBody),
    owner,
    leaseUntil: Number(leaseUntil),
    reconcileAttempts: Number(attempts),
    ...(replayKey ? { replayKey } : {}),
  };
}

function windowsOf(d: unknown, r: unknown): CompanyWindows {
  return { dossierUntil: Number(d ?? 0), requisitesUntil: Number(r ?? 0) };
}

export class RedisCharges implements ChargeStore {
  constructor(
    private readonly link: RedisLink,
    private readonly ledgerMaxLen: number,
  ) {}

  async openCharge(p: PendingCharge, counters: BudgetCounterSpec[]): Promise<ReserveResult> {
    const { k } = this.link;
    const specs = holdSpecs(counters);
    const { owner, leaseUntil, reconcileAttempts: _, ...body } = pendingOf(p, specs);
    const keys = [
      ...counterKeys(
        k,
        specs.map((s) => s.key),
      ),
      k.pendingEntry(body.key),
      k.pendingIndex,
    ];
    const args = [
      body.key,
      minorOf(body.estimateMinor),
      CLAIM_TTL_MS,
      ...reserveArgs(specs),
      JSON.stringify(body),
      owner,
      leaseUntil,
      body.at,
      CLAIM_TTL_MS,
    ];
    return reserveResult((await this.link.script(OPEN_CHARGE, keys, args)) as number[], specs);
  }

  async renewCharge(key: string, owner: string, leaseUntil: number, replayKey?: string): Promise<boolean> {
    const until = leaseArgs(key, leaseUntil);
    const args = [owner, until, replayKey ?? ''];
    return Number(await this.link.script(RENEW_CHARGE, [this.link.k.pendingEntry(key)], args)) === 1;
  }

  async takeOverCharge(
    key: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<PendingCharge | null> {
    const until = leaseArgs(key, leaseUntil);
    const reply = (await this.link.script(
      TAKE_OVER_CHARGE,
      [this.link.k.pendingEntry(key)],
      [owner, now, until],
    )) as [string, string, string, string, string | null] | null;
    return reply ? entryOf(...reply) : null;
  }

  async recordCharge(r: ChargeRecord): Promise<RecordResult> {
    const { k } = this.link;
    const c = recordOf(r);
    const inn = c.window?.inn ?? '';
    const keys = [
      k.pendingEntry(c.key),
      k.pendingIndex,
      k.claim(c.key),
      k.ledger,
      k.windows(inn),
      k.windowIndex,
    ];
    const counters = [...new Set(r.counters)];
    const args = [
      k.money,
      c.key,
      c.amount,
      c.ttl,
      String(r.entry.requestId ?? ''),
      CLAIM_TTL_MS,
      c.at,
      ledgerBody(r.entry),
      this.ledgerMaxLen,
      c.window?.kind ?? '',
      c.window?.until ?? 0,
      c.at,
      inn,
      counters.length,
      ...counters,
    ];
    const [recorded, d, w] = (await this.link.script(RECORD_CHARGE, keys, args)) as number[];
    return { recorded: recorded === 1, windows: c.window ? windowsOf(d, w) : null };
  }

  async releaseCharge(key: string): Promise<void> {
    const { k } = this.link;
    await this.link.script(RELEASE_CHARGE, [k.pendingEntry(key), k.pendingIndex], [k.money, key]);
  }

  async pendingCharges(limit = DEFAULT_PENDING_LIMIT): Promise<PendingCharge[]> {
    if (limit <= 0) return [];
    const { k } = this.link;
    const flat = (await this.link.script(PENDING_CHARGES, [k.pendingIndex], [k.money, limit])) as string[];
    const out: PendingCharge[] = [];
    for (let i = 0; i < flat.length; i += 6)
      out.push(entryOf(flat[i + 1]!, flat[i + 2]!, flat[i + 3]!, flat[i + 4]!, flat[i + 5]));
    return out;
  }

  async isRecorded(key: string): Promise<boolean> {
    const { link } = this;
    return (await link.run(() => link.client.exists(link.k.claim(key)))) === 1;
  }

  async windows(inn: string): Promise<CompanyWindows> {
    const { link } = this;
    const [d, r] = await link.run(() => link.client.hmget(link.k.windows(inn), 'd', 'r'));
    return windowsOf(d, r);
  }

  async openWindow(inn: string, kind: WindowKind, until: number, now: number): Promise<CompanyWindows> {
    const { k } = this.link;
    const args = [inn, windowOpeningOf(kind), Math.floor(until), Math.floor(now)];
    const [d, r] = (await this.link.script(OPEN_WINDOW, [k.windows(inn), k.windowIndex], args)) as number[];
    return windowsOf(d, r);
  }

  async listWindows(
    now: number,
    limit = DEFAULT_WINDOWS_LIMIT,
  ): Promise<Array<CompanyWindows & { inn: string }>> {
    if (limit <= 0) return [];
    const { k } = this.link;
    const flat = (await this.link.script(
      LIST_WINDOWS,
      [k.windowIndex],
      [k.money, Math.floor(now), limit],
    )) as (string | number)[];
    const out: Array<CompanyWindows & { inn: string }> = [];
    for (let i = 0; i < flat.length; i += 3)
      out.push({ inn: String(flat[i]), ...windowsOf(flat[i + 1], flat[i + 2]) });
    return out;
  }
}
