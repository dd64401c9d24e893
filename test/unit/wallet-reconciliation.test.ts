// wallet-reconciliation.ts: unattributed spend is what the wallet fell by beyond the ledger;
// top-ups are never spend; a charge that straddles a snapshot (started before it, debited after)
// is uncertain, never a top-up followed by unattributed spend.
import { describe, expect, it } from 'vitest';
import { byDay, reconcile } from '../../src/cost/wallet-reconciliation.ts';

const LAG = 30_000;
const s = (asOf: number, balanceMinor: number) => ({ asOf, balanceMinor });
const c = (at: number, amountMinor: number) => ({ at, amountMinor });

describe('reconcile', () => {
  it('a fall the ledger explains is 0; a fall beyond it is unattributed', () => {
    const [r] = reconcile([s(0, 100_000), s(600_000, 80_200)], [c(100_000, 9_900)], LAG);
    expect(r).toMatchObject({
      ledgerMinor: 9_900,
      vendorDebitMinor: 19_800,
      unattributedMinor: 9_900,
      topUpMinor: 0,
    });
    const [ok] = reconcile([s(0, 100_000), s(600_000, 90_100)], [c(100_000, 9_900)], LAG);
    expect(ok).toMatchObject({ unattributedMinor: 0, topUpMinor: 0 });
  });

  it('a rise is a top-up, never spend', () => {
    const [r] = reconcile([s(0, 100_000), s(600_000, 140_100)], [c(100_000, 9_900)], LAG);
    expect(r).toMatchObject({ vendorDebitMinor: 0, unattributedMinor: 0, topUpMinor: 50_000 });
  });

  it('a charge straddling a snapshot is uncertain on both sides, not a top-up then a charge', () => {
    // started 5 s before the first snapshot's as_of, debited after it
    const snaps = [s(0, 100_000), s(600_000, 90_100), s(1_200_000, 90_100)];
    const rs = reconcile(snaps, [c(595_000, 9_900)], LAG);
    // the balance at 600 000 already shows it, or not: either way no difference
    expect(rs.map((r) => [r.unattributedMinor, r.topUpMinor])).toEqual([
      [0, 0],
      [0, 0],
    ]);
    const late = reconcile(
      [s(0, 100_000), s(600_000, 100_000), s(1_200_000, 90_100)],
      [c(595_000, 9_900)],
      LAG,
    );
    expect(late.map((r) => [r.unattributedMinor, r.topUpMinor])).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  it('snapshots are sorted and deduplicated; per day sums by the interval end and charge start', () => {
    const rs = reconcile([s(600_000, 90_100), s(0, 100_000), s(0, 100_000)], [c(100_000, 9_900)], LAG);
    expect(rs).toHaveLength(1);
    const days = byDay(rs, [c(100_000, 9_900)], () => '2026-11-28');
    expect(days).toEqual([
      {
        day: '2026-11-28',
        vendorDebitMinor: 9_900,
        ledgerMinor: 9_900,
        unattributedMinor: 0,
        topUpMinor: 0,
        balanceMinor: 90_100,
      },
    ]);
  });
});

describe('reconcile against a scan of every charge for every interval', () => {
  /** The former reconcile(): each interval looked at the charges from the first one. */
  function reference(
    snapshots: ReturnType<typeof s>[],
    charges: ReturnType<typeof c>[],
    lagMs: number,
  ): Array<{ ledgerMinor: number; uncertainMinor: number }> {
    const snaps = [...new Map(snapshots.map((x) => [x.asOf, x])).values()].sort((a, b) => a.asOf - b.asOf);
    const sorted = [...charges].sort((a, b) => a.at - b.at);
    const out: Array<{ ledgerMinor: number; uncertainMinor: number }> = [];
    for (let i = 1; i < snaps.length; i++) {
      const s0 = snaps[i - 1]!;
      const s1 = snaps[i]!;
      let certain = 0;
      let uncertain = 0;
      for (const ch of sorted) {
        if (ch.at <= s0.asOf - lagMs) continue;
        if (ch.at > s1.asOf) break;
        if (ch.at <= s0.asOf || ch.at > s1.asOf - lagMs) uncertain += ch.amountMinor;
        else certain += ch.amountMinor;
      }
      out.push({ ledgerMinor: certain, uncertainMinor: uncertain });
    }
    return out;
  }

  it('gives every interval the same certain and uncertain sums, lags longer and shorter than the gaps', () => {
    let seed = 11;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (const lag of [0, 5_000, 30_000, 200_000]) {
      for (let round = 0; round < 20; round++) {
        const snaps = Array.from({ length: 2 + Math.floor(rand() * 40) }, () =>
          s(Math.floor(rand() * 3_600_000), 1_000_000),
        );
        // Charges on and around the snapshots' own instants too (the bounds are <= and >).
        const charges = Array.from({ length: Math.floor(rand() * 300) }, () => {
          const near = snaps[Math.floor(rand() * snaps.length)]!.asOf;
          const at =
            rand() < 0.3
              ? near + [-lag, -1, 0, 1, lag][Math.floor(rand() * 5)]!
              : Math.floor(rand() * 3_700_000) - 50_000;
          return c(at, 1 + Math.floor(rand() * 10_000));
        });
        const got = reconcile(snaps, charges, lag).map((r) => ({
          ledgerMinor: r.ledgerMinor,
          uncertainMinor: r.uncertainMinor,
        }));
        expect(got).toEqual(reference(snaps, charges, lag));
      }
    }
  });
});
