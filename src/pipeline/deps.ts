// Everything the request pipeline needs, built once per server by buildServer().
import type { Logger } from 'pino';
import type { ResponseCache } from '../cache/index.ts';
import type { SectionVerdicts } from '../cache/section-verdicts.ts';
import type { CheckTickets } from '../checks/check-tickets.ts';
import type { Clock, Random } from '../clock.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { BudgetGuard } from '../cost/budget-guard.ts';
import type { ChargeBook } from '../cost/charge-book.ts';
import type { ChargeGate } from '../cost/charge-gate.ts';
import type { ChargeOutbox } from '../cost/charge-outbox.ts';
import type { Coalescer } from '../cost/coalescer.ts';
import type { MoneyClock } from '../cost/money-clock.ts';
import type { PriceBook } from '../cost/price-book.ts';
import type { Reconciler } from '../cost/reconciler.ts';
import type { SpendLedger } from '../cost/spend-ledger.ts';
import type { WalletSnapshots } from '../cost/wallet-snapshots.ts';
import type { WindowTracker } from '../cost/window-tracker.ts';
import type { RateGovernor } from '../limits/index.ts';
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import type { Tracing } from '../ops/tracing.ts';
import type { Store } from '../store/store.ts';
import type { GovernedUpstream } from '../upstream/governed-upstream.ts';

/**
 * What request handling asks the rate governor without taking a slot: how long a route may wait
 * for a start, and the X-RateLimit-* headroom (slots are only taken through `upstream`).
 */
export type RateView = Pick<RateGovernor, 'maxWaitFor' | 'headroomFor' | 'headroomIfKnown'>;

export interface PipelineDeps {
  config: GatewayConfig;
  /** The upstream behind the shared rate budget (every call acquires a start first). */
  upstream: GovernedUpstream;
  /** The governor's read-only side (the same RateGovernor `upstream` takes slots from). */
  limits: RateView;
  store: Store;
  clock: Clock;
  /** Jitter for retry backoff. */
  random: Random;
  logger: Logger;
  /** Counters the stages feed (spend, savings); src/metrics/gateway-metrics.ts. */
  metrics: GatewayMetrics;
  windows: WindowTracker;
  gate: ChargeGate;
  coalescer: Coalescer;
  budgets: BudgetGuard;
  /** Charged calls' money: pending entry, record, release, unknown (issue #10). */
  charges: ChargeBook;
  /** Money operations waiting for an unreachable store. */
  outbox: ChargeOutbox;
  /** Resolves charges whose outcome is unknown. */
  reconciler: Reconciler;
  ledger: SpendLedger;
  /** The clock budget periods and leases follow: the money store's (cost/money-clock.ts). */
  moneyClock: MoneyClock;
  /** Wallet snapshots from /v1/me, for reconciliation against the ledger. */
  walletSnapshots: WalletSnapshots;
  /** How long after its call started a charge may be debited (reconciliation's uncertainty). */
  walletLagMs: number;
  prices: PriceBook;
  tickets: CheckTickets;
  cache: ResponseCache;
  /** OpenTelemetry traces (src/ops/tracing.ts); absent: tracing is off, no span is made. */
  tracing?: Tracing;
  /** Learned section/dossier equivalence (stages/derive.ts); absent: sections are never derived. */
  sections?: SectionVerdicts;
}
