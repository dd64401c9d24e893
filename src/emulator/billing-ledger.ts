// Money: per-account wallets, the price table (charged at once, shown in /v1/me only after
// the configured lag) and the ledger of every charge. A charge never drives a wallet below
// zero and is never recorded twice; it reads time only from the injected clock.
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { PRICE_KEYS, PRICE_TITLES, type PriceKey, type PriceTable } from './emulator-config.ts';
import { isoMsk } from './time-format.ts';

export interface LedgerEntry {
  at_ms: number;
  at: string;
  account_id: number;
  key_name: string;
  inn: string;
  kind: PriceKey;
  amount_minor: number;
  idempotency_key: string | null;
  request_id: string;
  route: string;
  check_id?: string;
}

export interface ChargeRequest {
  accountId: number;
  keyName: string;
  inn: string;
  kind: PriceKey;
  idempotencyKey: string | null;
  requestId: string;
  route: string;
  checkId?: string;
}

interface PriceChange {
  at: number;
  prices: PriceTable;
}

export class BillingLedger {
  private readonly wallets = new Map<number, number>();
  /** Per account: every balance change (ms, balance), for /v1/me's lagging `as_of` view. */
  private readonly walletHistory = new Map<number, Array<{ at: number; balance: number }>>();
  private current: PriceTable;
  private history: PriceChange[] = [];
  private entries: LedgerEntry[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly initialPrices: PriceTable,
    private readonly initialWallet: number,
    private readonly priceLagMs: number,
    private readonly walletLagMs = 0,
  ) {
    this.current = { ...initialPrices };
    this.history = [{ at: Number.NEGATIVE_INFINITY, prices: { ...initialPrices } }];
  }

  balance(accountId: number): number {
    return this.wallets.get(accountId) ?? this.initialWallet;
  }

  setBalance(accountId: number, balanceMinor: number): void {
    this.setWallet(accountId, balanceMinor);
  }

  /**
   * The wallet as /v1/me shows it: the balance as of `walletLagMs` ago, with that moment as
   * `as_of` (the spec: the balance is the last known value and may lag charges and top-ups).
   * Every key of the account sees, and debits, the same wallet.
   */
  shownWallet(accountId: number): { balance_minor: number; as_of: number } {
    const asOf = this.clock.now() - this.walletLagMs;
    if (this.walletLagMs === 0) return { balance_minor: this.balance(accountId), as_of: asOf };
    let balance = this.initialWallet;
    for (const change of this.walletHistory.get(accountId) ?? []) {
      if (change.at > asOf) break;
      balance = change.balance;
    }
    return { balance_minor: balance, as_of: asOf };
  }

  private setWallet(accountId: number, balance: number): void {
    this.wallets.set(accountId, balance);
    if (this.walletLagMs === 0) return;
    const history = this.walletHistory.get(accountId) ?? [];
    history.push({ at: this.clock.now(), balance });
    // Only what the lagging view can still need, plus the last change before it.
    const cutoff = this.clock.now() - this.walletLagMs;
    while (history.length > 1 && history[1]!.at <= cutoff) history.shift();
    this.walletHistory.set(accountId, history);
  }

  /** The price charged now; throws price_inactive for a kind withdrawn from sale. */
  price(kind: PriceKey): number {
    const price = this.current[kind];
    if (price === null) throw new ApiError('price_inactive', { kind });
    return price;
  }

  /** Changes prices for charging at once; /v1/me shows them after the lag. */
  changePrices(changes: Partial<PriceTable>): PriceTable {
    this.current = { ...this.current, ...changes };
    this.history.push({ at: this.clock.now(), prices: { ...this.current } });
    return { ...this.current };
  }

  get chargingPrices(): PriceTable {
    return { ...this.current };
  }

  /** The table /v1/me shows: the newest change at least `priceLagMs` old. */
  shownPrices(): Array<{ key: PriceKey; title: string; price_minor: number }> {
    const cutoff = this.clock.now() - this.priceLagMs;
    let shown = this.history[0]!.prices;
    for (const change of this.history) if (change.at <= cutoff) shown = change.prices;
    if (this.history.length > 16)
      this.history = this.history.filter((c) => c.at > cutoff || c.prices === shown);
    const list = [];
    for (const key of PRICE_KEYS) {
      const price = shown[key];
      if (price !== null) list.push({ key, title: PRICE_TITLES[key], price_minor: price });
    }
    return list;
  }

  /** Debits the wallet and records the charge; 402 (nothing charged) when the balance is short. */
  charge(request: ChargeRequest, amountMinor: number): LedgerEntry {
    const balance = this.balance(request.accountId);
    if (balance < amountMinor) {
      throw new ApiError('insufficient_funds', { balance_minor: balance, price_minor: amountMinor });
    }
    this.setWallet(request.accountId, balance - amountMinor);
    const now = this.clock.now();
    const entry: LedgerEntry = {
      at_ms: now,
      at: isoMsk(now),
      account_id: request.accountId,
      key_name: request.keyName,
      inn: request.inn,
      kind: request.kind,
      amount_minor: amountMinor,
      idempotency_key: request.idempotencyKey,
      request_id: request.requestId,
      route: request.route,
      ...(request.checkId ? { check_id: request.checkId } : {}),
    };
    this.entries.push(entry);
    return entry;
  }

  ledger(): {
    entries: LedgerEntry[];
    totals: {
      by_kind: Record<string, { count: number; amount_minor: number }>;
      count: number;
      amount_minor: number;
    };
  } {
    const byKind: Record<string, { count: number; amount_minor: number }> = {};
    let amount = 0;
    for (const entry of this.entries) {
      const total = byKind[entry.kind] ?? { count: 0, amount_minor: 0 };
      total.count += 1;
      total.amount_minor += entry.amount_minor;
      byKind[entry.kind] = total;
      amount += entry.amount_minor;
    }
    return {
      entries: [...this.entries],
      totals: { by_kind: byKind, count: this.entries.length, amount_minor: amount },
    };
  }

  reset(): void {
    this.wallets.clear();
    this.walletHistory.clear();
    this.current = { ...this.initialPrices };
    this.history = [{ at: Number.NEGATIVE_INFINITY, prices: { ...this.initialPrices } }];
    this.entries = [];
  }
}
