// Wallet snapshots kept for reconciliation (wallet-reconciliation.ts): every GET /v1/me the
// gateway reads gives the vendor's balance and its `as_of`. One state key per calendar day (the
// budget zone) holds that day's snapshots, kept 400 days; a snapshot is kept when the balance
// changed or 10 minutes passed since the last kept one, so a day holds at most ~150 plus one per
// change. Replicas read /v1/me independently: the same as_of is kept once. Two replicas writing
// the same day at once can drop one snapshot: harmless, since reconciling over fewer snapshots
// gives the same totals over longer intervals.
//
// The first replica to keep a snapshot (setIfAbsent on its marker) reports the newest settled
// interval (the one between the two snapshots before it) once, so shared counters count each
// interval once. A range read spans at most ~400 day keys.
//
// Must never: invent a snapshot, or count one interval twice across replicas.
import { getAll } from '../store/state-store.ts';
import type { StateStore } from '../store/store.ts';
import { localDate } from './budget-periods.ts';
import type { WalletSnapshot } from './wallet-reconciliation.ts';

export const SNAPSHOT_TTL_MS = 400 * 86_400_000;
const KEEP_EVERY_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

const dayKey = (day: string) => `wallet:day:${day}`;
const markerKey = (asOf: number) => `wallet:seen:${asOf}`;

export class WalletSnapshots {
  private last: WalletSnapshot | null = null;

  constructor(
    private readonly state: StateStore,
    private readonly timeZone: string,
  ) {}

  /**
   * Keeps a snapshot from /v1/me. When THIS call was the first (across replicas) to keep it,
   * returns the interval between the two snapshots kept before it: the newest one that has
   * settled (every call that started in it has answered by now, since the next snapshot is at
   * least a /v1/me refresh later), for the caller to reconcile and report once. Else null.
   */
  async record(wallet: {
    balance_minor: number;
    as_of: string;
  }): Promise<[WalletSnapshot, WalletSnapshot] | null> {
    const asOf = Date.parse(wallet.as_of);
    if (!Number.isFinite(asOf) || !Number.isSafeInteger(wallet.balance_minor)) return null;
    const snap = { asOf, balanceMinor: wallet.balance_minor };
    const last = this.last;
    if (
      last &&
      (asOf <= last.asOf || (snap.balanceMinor === last.balanceMinor && asOf - last.asOf < KEEP_EVERY_MS))
    )
      return null;
    this.last = snap;
    if (!(await this.state.setIfAbsent(markerKey(asOf), '1', 2 * DAY_MS))) return null;
    // One read of the days around as_of: the two kept before it and today's list to append to.
    const today = localDate(asOf, this.timeZone);
    const byDay = await this.readDays(asOf - DAY_MS, asOf);
    const day = byDay.get(today) ?? [];
    const earlier = sorted([...byDay.values()].flat()).filter((w) => w.asOf < asOf);
    day.push(snap);
    await this.state.set(dayKey(today), JSON.stringify(day), SNAPSHOT_TTL_MS);
    const [a, b] = earlier.slice(-2);
    return a && b ? [a, b] : null;
  }

  /** Snapshots with from <= asOf < to, oldest first (plus the last one before `from`). */
  async read(fromMs: number, toMs: number): Promise<WalletSnapshot[]> {
    const all = sorted([...(await this.readDays(fromMs, toMs)).values()].flat());
    const before = all.filter((w) => w.asOf < fromMs).pop();
    const inside = all.filter((w) => w.asOf >= fromMs && w.asOf < toMs);
    return before ? [before, ...inside] : inside;
  }

  /** The kept lists of the local days around [fromMs, toMs), by day (a day before and after too). */
  private async readDays(fromMs: number, toMs: number): Promise<Map<string, WalletSnapshot[]>> {
    const days: string[] = [];
    for (let t = fromMs - DAY_MS; t < toMs + DAY_MS; t += DAY_MS / 2) {
      const d = localDate(t, this.timeZone);
      if (!days.includes(d)) days.push(d);
    }
    const raws = await getAll(this.state, days.map(dayKey));
    const out = new Map<string, WalletSnapshot[]>();
    raws.forEach((raw, i) => {
      if (typeof raw === 'string') out.set(days[i]!, JSON.parse(raw) as WalletSnapshot[]);
    });
    return out;
  }
}

/** Oldest first, one per as_of (replicas may keep the same one). */
function sorted(list: WalletSnapshot[]): WalletSnapshot[] {
  return [...new Map(list.map((w) => [w.asOf, w])).values()].sort((a, b) => a.asOf - b.asOf);
}
