// The Redis store's budget role: counters under the `{money}` hash tag (shared with the money
// role's scripts), every multi-counter step one Lua script (budget-scripts.ts).
//
// Must never: hold on some counters and not others.
import type {
  BudgetCounterSpec,
  BudgetStore,
  CounterState,
  ReserveRequest,
  ReserveResult,
} from '../budget-store.ts';
import { minorOf, reserveResult, ttlOf, uniqueCounters, uniqueStrings } from '../store-util.ts';
import { READ_COUNTERS, RESERVE, SETTLE } from './budget-scripts.ts';
import type { RedisKeys } from './keys.ts';
import type { RedisLink } from './link.ts';

/** KEYS for counter scripts: c1, h1, c2, h2, ... */
export function counterKeys(k: RedisKeys, keys: string[]): string[] {
  return keys.flatMap((key) => [k.budgetCounter(key), k.budgetHolds(key)]);
}

/** ARGV tail for reserve(): limit ('' = none), ttl per counter. */
export function reserveArgs(specs: BudgetCounterSpec[]): (string | number)[] {
  return specs.flatMap((spec) => [
    spec.limitMinor === null ? '' : minorOf(spec.limitMinor),
    ttlOf(spec.ttlMs),
  ]);
}

export class RedisBudgets implements BudgetStore {
  constructor(private readonly link: RedisLink) {}

  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const amount = minorOf(request.amountMinor);
    const holdMs = ttlOf(request.holdMs, 'holdMs');
    const specs = uniqueCounters(request.counters);
    if (specs.length === 0) return { ok: true };
    const args = [request.id, amount, holdMs, ...reserveArgs(specs)];
    const keys = counterKeys(
      this.link.k,
      specs.map((s) => s.key),
    );
    return reserveResult((await this.link.script(RESERVE, keys, args)) as number[], specs);
  }

  async settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void> {
    await this.settleScript(id, counterKeys, String(minorOf(actualMinor, 'actualMinor')), ttlOf(ttlMs));
  }

  async release(id: string, counterKeys: string[]): Promise<void> {
    await this.settleScript(id, counterKeys, '', 1);
  }

  async addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void> {
    await this.settleScript('', counterKeys, String(minorOf(amountMinor)), ttlOf(ttlMs));
  }

  async readCounters(keys: string[]): Promise<CounterState[]> {
    if (keys.length === 0) return [];
    const reply = (await this.link.script(READ_COUNTERS, counterKeys(this.link.k, keys), [])) as number[];
    return keys.map((key, i) => ({
      key,
      spentMinor: Number(reply[2 * i]),
      reservedMinor: Number(reply[2 * i + 1]),
    }));
  }

  private async settleScript(id: string, keys: string[], amount: string, ttl: number): Promise<void> {
    const unique = uniqueStrings(keys);
    if (unique.length === 0) return;
    await this.link.script(SETTLE, counterKeys(this.link.k, unique), [id, amount, ttl]);
  }
}
