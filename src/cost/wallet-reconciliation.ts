// The vendor's wallet as the independent check of the ledger (issue 28 item 5). Between two
// consecutive wallet snapshots (GET /v1/me: balance and `as_of`, the moment the balance was
// correct) the balance should fall by exactly what the ledger charged in between. What it fell by
// more is UNATTRIBUTED spend: another key or the vendor's cabinet spending on the account, or a
// charge the gateway lost. What it fell by less (rose) is a TOP-UP, never reported as spend.
//
// Timing: a ledger entry's `at` is when its call started; the upstream debits somewhere between
// that and its answer (at most `lagMs` later: the upstream timeout). An entry that started within
// `lagMs` before either end of an interval may have been debited on either side of that end, so
// it is "uncertain": the expected balance is a range, and only a balance outside the range is a
// difference (a charge straddling a snapshot never shows up as a top-up followed by an
// unattributed charge). Pure functions; the clock and the store are the caller's.
//
// Must never: report a top-up as unattributed spend, or count a ledger entry twice in one interval.

export interface WalletSnapshot {
  /** ms: the vendor's as_of. */
  asOf: number;
  balanceMinor: number;
}

export interface LedgerCharge {
  /** ms: when the call started. */
  at: number;
  amountMinor: number;
}

export interface ReconciledInterval {
  from: number;
  to: number;
  balanceFrom: number;
  balanceTo: number;
  /** The fall in balance (0 when it rose). */
  vendorDebitMinor: number;
  /** Charges the ledger certainly placed in the interval. */
  ledgerMinor: number;
  /** Charges near either end that may belong to this interval or a neighbour. */
  uncertainMinor: number;
  unattributedMinor: number;
  topUpMinor: number;
}

/** Intervals between consecutive snapshots (sorted and deduplicated by as_of here). */
export function reconcile(
  snapshots: readonly WalletSnapshot[],
  charges: readonly LedgerCharge[],
  lagMs: number,
): ReconciledInterval[] {
  const snaps = [...new Map(snapshots.map((s) => [s.asOf, s])).values()].sort((a, b) => a.asOf - b.asOf);
  const sorted = [...charges].sort((a, b) => a.at - b.at);
  const out: ReconciledInterval[] = [];
  // The first charge an interval may hold: it only moves forward, as the intervals do (one pass
  // over the charges for all intervals; a scan from the first charge for each interval made the
  // console's 7 days, a snapshot a minute and 70,000 charges, hold the event loop 1.5 s).
  let first = 0;
  for (let i = 1; i < snaps.length; i++) {
    const s0 = snaps[i - 1]!;
    const s1 = snaps[i]!;
    let certain = 0;
    let uncertain = 0;
    while (first < sorted.length && sorted[first]!.at <= s0.asOf - lagMs) first++;
    for (let j = first; j < sorted.length; j++) {
      const c = sorted[j]!;
      if (c.at > s1.asOf) break;
      // Started before the interval but maybe debited in it; or started in it but maybe debited
      // after its end.
      if (c.at <= s0.asOf || c.at > s1.asOf - lagMs) uncertain += c.amountMinor;
      else certain += c.amountMinor;
    }
    const low = s0.balanceMinor - certain - uncertain;
    const high = s0.balanceMinor - certain;
    const actual = s1.balanceMinor;
    out.push({
      from: s0.asOf,
      to: s1.asOf,
      balanceFrom: s0.balanceMinor,
      balanceTo: actual,
      vendorDebitMinor: Math.max(0, s0.balanceMinor - actual),
      ledgerMinor: certain,
      uncertainMinor: uncertain,
      unattributedMinor: actual < low ? low - actual : 0,
      topUpMinor: actual > high ? actual - high : 0,
    });
  }
  return out;
}

export interface ReconciledDay {
  day: string;
  vendorDebitMinor: number;
  ledgerMinor: number;
  unattributedMinor: number;
  topUpMinor: number;
  /** The last balance seen that day. */
  balanceMinor: number;
}

/**
 * Per day: the intervals summed by the day of their end, and the ledger's charges by the day of
 * their start (`dayOf` gives the local calendar day).
 */
export function byDay(
  intervals: readonly ReconciledInterval[],
  charges: readonly LedgerCharge[],
  dayOf: (ms: number) => string,
): ReconciledDay[] {
  const days = new Map<string, ReconciledDay>();
  const dayFor = (day: string, balance: number) => {
    let d = days.get(day);
    if (!d) {
      d = {
        day,
        vendorDebitMinor: 0,
        ledgerMinor: 0,
        unattributedMinor: 0,
        topUpMinor: 0,
        balanceMinor: balance,
      };
      days.set(day, d);
    }
    return d;
  };
  for (const r of intervals) {
    const d = dayFor(dayOf(r.to), r.balanceTo);
    d.vendorDebitMinor += r.vendorDebitMinor;
    d.unattributedMinor += r.unattributedMinor;
    d.topUpMinor += r.topUpMinor;
    d.balanceMinor = r.balanceTo;
  }
  for (const c of charges) {
    const d = days.get(dayOf(c.at));
    if (d) d.ledgerMinor += c.amountMinor;
  }
  return [...days.values()].sort((a, b) => (a.day < b.day ? -1 : 1));
}
