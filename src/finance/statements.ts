// Month statements (issue 29 item 6), the pure part: a month's bounds and state in the budget
// time zone, the tally of its ledger charges, and the statement built from that tally, the
// savings and served-request counters (savings-record.ts), the caps in force and the audit
// trail's cap changes; plus its CSV form. The routes (statement-routes.ts) read the inputs.
//
// Must never: read a clock, a store or the network (every input is an argument), or round money
// (amounts stay integer minor units; only the unpaid share is a ratio).
import { ZonedTime } from '../cost/spend-ledger.ts';

export const TOTAL = '_total';

export interface MonthBounds {
  /** "YYYY-MM". */
  month: string;
  /** Local midnight of the month's first day (inclusive), ms. */
  fromMs: number;
  /** Local midnight of the next month's first day (exclusive), ms. */
  toMs: number;
  /** When the month closes: its end plus one day of grace (local midnight of the next month's 2nd). */
  closesAtMs: number;
  /** Its local days, "YYYY-MM-DD". */
  days: string[];
}

/** "YYYY-MM" with a month 01..12 and a year 2000..9999, or null. */
export function parseMonth(text: string): { year: number; month: number } | null {
  const m = /^(\d{4})-(\d{2})$/.exec(text);
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  if (year < 2000 || month < 1 || month > 12) return null;
  return { year, month };
}

/** The instant of local midnight starting y-m-d in `zone` (month may be 13: next year's January). */
export function localMidnight(zone: ZonedTime, year: number, month: number, day: number): number {
  const wall = Date.UTC(year, month - 1, day);
  // Two steps: the offset at the guess, then at the corrected instant (a DST change near midnight).
  const first = wall - zone.offsetMinutes(wall) * 60_000;
  return wall - zone.offsetMinutes(first) * 60_000;
}

export function monthBounds(text: string, timeZone: string): MonthBounds | null {
  const parsed = parseMonth(text);
  if (!parsed) return null;
  const { year, month } = parsed;
  const zone = new ZonedTime(timeZone);
  const count = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const days: string[] = [];
  for (let d = 1; d <= count; d++) days.push(`${text}-${String(d).padStart(2, '0')}`);
  return {
    month: text,
    fromMs: localMidnight(zone, year, month, 1),
    toMs: localMidnight(zone, year, month + 1, 1),
    closesAtMs: localMidnight(zone, year, month + 1, 2),
    days,
  };
}

export type MonthState = 'future' | 'open' | 'closed';

export function monthState(bounds: MonthBounds, nowMs: number): MonthState {
  if (nowMs < bounds.fromMs) return 'future';
  return nowMs < bounds.closesAtMs ? 'open' : 'closed';
}

interface Sum {
  count: number;
  amountMinor: number;
}

/** Ledger charges of a month per app: by kind and by local day. Fed one entry at a time. */
export class ChargeTally {
  readonly byApp = new Map<string, { byKind: Map<string, Sum>; byDay: Map<string, Sum> }>();

  add(e: { app: string; kind: string; amountMinor: number }, day: string): void {
    let a = this.byApp.get(e.app);
    if (!a) {
      a = { byKind: new Map(), byDay: new Map() };
      this.byApp.set(e.app, a);
    }
    bump(a.byKind, e.kind, e.amountMinor);
    bump(a.byDay, day, e.amountMinor);
  }
}

function bump(map: Map<string, Sum>, key: string, amountMinor: number): void {
  const s = map.get(key) ?? { count: 0, amountMinor: 0 };
  s.count++;
  s.amountMinor += amountMinor;
  map.set(key, s);
}

export interface CapInForce {
  period: string;
  limit_minor: number | null;
  soft_minor: number | null;
  source: string;
  version: number;
}

export interface CapChange {
  time: string;
  at_ms: number;
  actor: string;
  action: string;
  period: string;
  before: unknown;
  after: unknown;
  reason: string | null;
}

export interface StatementInput {
  bounds: MonthBounds;
  timeZone: string;
  state: 'open' | 'closed';
  computedAtMs: number;
  apps: readonly string[];
  kinds: readonly string[];
  reasons: readonly string[];
  charges: ChargeTally;
  /** Counter values by key (savings-record.ts keys); absent: 0. */
  counters: ReadonlyMap<string, number>;
  savingsKey(app: string, kind: string, reason: string, day: string): string;
  servedKey(app: string, day: string): string;
  unpaidKey(app: string, day: string): string;
  /** Per app, and under GLOBAL the global caps. */
  caps: ReadonlyMap<string, CapInForce[]>;
  /** Audit entries of budget changes in the month, oldest first. */
  changes: ReadonlyArray<{
    at: number;
    actor: string;
    action: string;
    target: string;
    before: unknown;
    after: unknown;
    reason: string | null;
  }>;
  globalScope: string;
}

export interface StatementDay {
  day: string;
  charges_count: number;
  charges_minor: number;
  saved_minor: number;
  served: number;
  unpaid: number;
}

export interface StatementPart {
  app: string;
  charges: {
    count: number;
    amount_minor: number;
    by_kind: Array<{ kind: string; count: number; amount_minor: number }>;
  };
  savings: { total_minor: number; by_reason: Record<string, number>; by_kind: Record<string, number> };
  requests: { served: number; unpaid: number; paid: number; unpaid_share: number | null };
  caps: CapInForce[];
  cap_changes: CapChange[];
  /** The day with the most charged (the earliest of a tie); null in a month without charges. */
  peak_day: { day: string; amount_minor: number; count: number } | null;
  days: StatementDay[];
}

export interface Statement {
  month: string;
  /** The zone of the month's days (cost.timeZone). */
  time_zone: string;
  /** The zone of the times shown (tz=; default time_zone). */
  shown_in: string;
  state: 'open' | 'closed';
  from: string;
  from_ms: number;
  to: string;
  to_ms: number;
  closes_at: string;
  closes_at_ms: number;
  computed_at: string;
  computed_at_ms: number;
  apps: StatementPart[];
  total: StatementPart;
}

export function buildStatement(input: StatementInput): Statement {
  const zone = new ZonedTime(input.timeZone);
  const { bounds } = input;
  const count = (key: string) => input.counters.get(key) ?? 0;
  const changesOf = (scope: string): CapChange[] =>
    input.changes
      .filter((c) => c.target.startsWith(`budget:${scope}:`))
      .map((c) => ({
        time: zone.format(c.at),
        at_ms: c.at,
        actor: c.actor,
        action: c.action,
        period: c.target.slice(`budget:${scope}:`.length),
        before: c.before,
        after: c.after,
        reason: c.reason,
      }));

  const parts = input.apps.map((app): StatementPart => {
    const tally = input.charges.byApp.get(app);
    const byReason: Record<string, number> = {};
    const byKind: Record<string, number> = {};
    const days: StatementDay[] = [];
    let served = 0;
    let unpaid = 0;
    for (const day of bounds.days) {
      let saved = 0;
      for (const kind of input.kinds)
        for (const reason of input.reasons) {
          const n = count(input.savingsKey(app, kind, reason, day));
          if (n === 0) continue;
          saved += n;
          byReason[reason] = (byReason[reason] ?? 0) + n;
          byKind[kind] = (byKind[kind] ?? 0) + n;
        }
      const s = count(input.servedKey(app, day));
      const u = count(input.unpaidKey(app, day));
      served += s;
      unpaid += u;
      const charged = tally?.byDay.get(day);
      if (saved || s || u || charged)
        days.push({
          day,
          charges_count: charged?.count ?? 0,
          charges_minor: charged?.amountMinor ?? 0,
          saved_minor: saved,
          served: s,
          unpaid: u,
        });
    }
    const byKindCharges = [...(tally?.byKind ?? new Map<string, Sum>())]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, s]) => ({ kind, count: s.count, amount_minor: s.amountMinor }));
    return {
      app,
      charges: {
        count: byKindCharges.reduce((n, k) => n + k.count, 0),
        amount_minor: byKindCharges.reduce((n, k) => n + k.amount_minor, 0),
        by_kind: byKindCharges,
      },
      savings: { total_minor: sumOf(byReason), by_reason: byReason, by_kind: byKind },
      requests: requestsOf(served, unpaid),
      caps: input.caps.get(app) ?? [],
      cap_changes: changesOf(app),
      peak_day: peakOf(days),
      days,
    };
  });

  return {
    month: bounds.month,
    time_zone: input.timeZone,
    shown_in: input.timeZone,
    state: input.state,
    from: zone.format(bounds.fromMs),
    from_ms: bounds.fromMs,
    to: zone.format(bounds.toMs),
    to_ms: bounds.toMs,
    closes_at: zone.format(bounds.closesAtMs),
    closes_at_ms: bounds.closesAtMs,
    computed_at: zone.format(input.computedAtMs),
    computed_at_ms: input.computedAtMs,
    apps: parts,
    total: totalOf(parts, input.caps.get(input.globalScope) ?? [], changesOf(input.globalScope)),
  };
}

/** The same statement with its times shown in another zone (the figures are untouched). */
export function showIn(s: Statement, timeZone: string): Statement {
  const zone = new ZonedTime(timeZone);
  const part = (p: StatementPart): StatementPart => ({
    ...p,
    cap_changes: p.cap_changes.map((c) => ({ ...c, time: zone.format(c.at_ms) })),
  });
  return {
    ...s,
    shown_in: timeZone,
    from: zone.format(s.from_ms),
    to: zone.format(s.to_ms),
    closes_at: zone.format(s.closes_at_ms),
    computed_at: zone.format(s.computed_at_ms),
    apps: s.apps.map(part),
    total: part(s.total),
  };
}

function sumOf(r: Record<string, number>): number {
  return Object.values(r).reduce((n, v) => n + v, 0);
}

function requestsOf(served: number, unpaid: number): StatementPart['requests'] {
  return {
    served,
    unpaid,
    paid: served - unpaid,
    unpaid_share: served === 0 ? null : Math.round((unpaid / served) * 10_000) / 10_000,
  };
}

function peakOf(days: StatementDay[]): StatementPart['peak_day'] {
  let peak: StatementDay | null = null;
  for (const d of days) if (d.charges_minor > 0 && (!peak || d.charges_minor > peak.charges_minor)) peak = d;
  return peak ? { day: peak.day, amount_minor: peak.charges_minor, count: peak.charges_count } : null;
}

function totalOf(parts: StatementPart[], caps: CapInForce[], changes: CapChange[]): StatementPart {
  const byKind = new Map<string, Sum>();
  const byReason: Record<string, number> = {};
  const savedByKind: Record<string, number> = {};
  const days = new Map<string, StatementDay>();
  let served = 0;
  let unpaid = 0;
  for (const p of parts) {
    for (const k of p.charges.by_kind) {
      const s = byKind.get(k.kind) ?? { count: 0, amountMinor: 0 };
      s.count += k.count;
      s.amountMinor += k.amount_minor;
      byKind.set(k.kind, s);
    }
    for (const [r, n] of Object.entries(p.savings.by_reason)) byReason[r] = (byReason[r] ?? 0) + n;
    for (const [k, n] of Object.entries(p.savings.by_kind)) savedByKind[k] = (savedByKind[k] ?? 0) + n;
    served += p.requests.served;
    unpaid += p.requests.unpaid;
    for (const d of p.days) {
      const t = days.get(d.day) ?? {
        day: d.day,
        charges_count: 0,
        charges_minor: 0,
        saved_minor: 0,
        served: 0,
        unpaid: 0,
      };
      t.charges_count += d.charges_count;
      t.charges_minor += d.charges_minor;
      t.saved_minor += d.saved_minor;
      t.served += d.served;
      t.unpaid += d.unpaid;
      days.set(d.day, t);
    }
  }
  const kinds = [...byKind]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, s]) => ({ kind, count: s.count, amount_minor: s.amountMinor }));
  const dayList = [...days.values()].sort((a, b) => a.day.localeCompare(b.day));
  return {
    app: TOTAL,
    charges: {
      count: kinds.reduce((n, k) => n + k.count, 0),
      amount_minor: kinds.reduce((n, k) => n + k.amount_minor, 0),
      by_kind: kinds,
    },
    savings: { total_minor: sumOf(byReason), by_reason: byReason, by_kind: savedByKind },
    requests: requestsOf(served, unpaid),
    caps,
    cap_changes: changes,
    peak_day: peakOf(dayList),
    days: dayList,
  };
}

function cell(v: string | number | null): string {
  const s = v === null ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/**
 * The statement as CSV, one figure a line: `app,section,item,count,amount_minor` (first the
 * statement's own facts under `_statement`, the total's lines under `_total`; a cap change's line
 * carries its period, action, time and actor, and the new limit).
 */
export function statementCsv(s: Statement): string {
  const lines = ['app,section,item,count,amount_minor'];
  const row = (...v: Array<string | number | null>) => lines.push(v.map(cell).join(','));
  row('_statement', 'month', s.month, null, null);
  row('_statement', 'state', s.state, null, null);
  row('_statement', 'time_zone', s.time_zone, null, null);
  row('_statement', 'computed_at', s.computed_at, null, null);
  for (const p of [...s.apps, s.total]) {
    for (const k of p.charges.by_kind) row(p.app, 'charges', k.kind, k.count, k.amount_minor);
    row(p.app, 'charges', 'total', p.charges.count, p.charges.amount_minor);
    for (const [r, n] of Object.entries(p.savings.by_reason)) row(p.app, 'savings', r, null, n);
    row(p.app, 'savings', 'total', null, p.savings.total_minor);
    row(p.app, 'requests', 'served', p.requests.served, null);
    row(p.app, 'requests', 'unpaid', p.requests.unpaid, null);
    row(p.app, 'requests', 'unpaid_share', p.requests.unpaid_share, null);
    for (const c of p.caps) row(p.app, 'cap', c.period, null, c.limit_minor);
    for (const c of p.cap_changes) {
      const after = (c.after ?? {}) as { limit_minor?: number | null };
      row(
        p.app,
        'cap_change',
        `${c.period} ${c.action} ${c.time} by ${c.actor}`,
        null,
        after.limit_minor ?? null,
      );
    }
    if (p.peak_day) row(p.app, 'peak_day', p.peak_day.day, p.peak_day.count, p.peak_day.amount_minor);
  }
  return `${lines.join('\n')}\n`;
}
