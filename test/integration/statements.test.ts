// Month statements and savings on record (issue 29 item 6) through a real gateway and emulator:
// paid reads and cached reads (the hit path and the full pipeline), a cap changed by a finance
// token; then GET /admin/statements/{month} for the current month equals the ledger (count and
// amount by kind), the emulator's ledger, and the savings and served counters kept in the store
// (and the Prometheus savings); once the month has ended in cost.timeZone plus a day it is closed
// and frozen (a charge dated in it afterwards changes nothing); bad and future months are refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localDate } from '../../src/cost/budget-periods.ts';
import { savingsKey, servedKey, unpaidKey } from '../../src/finance/savings-record.ts';
import { monthBounds } from '../../src/finance/statements.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { msToNextMoscowNoon } from '../helpers/moscow-time.ts';
import { sumOf } from '../helpers/prom-text.ts';

const ZONE = 'Europe/Moscow';
let h: Harness;
const admin = () => ({ authorization: `Bearer ${h.adminToken}` });

interface Part {
  app: string;
  charges: {
    count: number;
    amount_minor: number;
    by_kind: Array<{ kind: string; count: number; amount_minor: number }>;
  };
  savings: { total_minor: number; by_reason: Record<string, number>; by_kind: Record<string, number> };
  requests: { served: number; unpaid: number; paid: number; unpaid_share: number | null };
  caps: Array<{ period: string; limit_minor: number | null; source: string }>;
  cap_changes: Array<{
    actor: string;
    action: string;
    period: string;
    after: { limit_minor: number | null };
  }>;
  peak_day: { day: string; amount_minor: number; count: number } | null;
  days: Array<{ day: string; charges_minor: number; saved_minor: number; served: number; unpaid: number }>;
}
interface StatementBody {
  month: string;
  state: string;
  from: string;
  to: string;
  computed_at: string;
  apps: Part[];
  total: Part;
}

async function statement(month: string, query = ''): Promise<{ status: number; body: StatementBody }> {
  const res = await fetch(`${h.gateway.url}/admin/statements/${month}${query}`, { headers: admin() });
  return { status: res.status, body: (await res.json()) as StatementBody };
}

async function ledgerAll(from: number, to: number) {
  const entries: Array<{ app: string; kind: string; amount_minor: number }> = [];
  let url = `${h.gateway.url}/admin/ledger?from=${from}&to=${to}&limit=10000`;
  for (;;) {
    const page = (await (await fetch(url, { headers: admin() })).json()) as {
      entries: typeof entries;
      complete: boolean;
      next_cursor: string;
    };
    entries.push(...page.entries);
    if (page.complete) return entries;
    url = `${h.gateway.url}/admin/ledger?limit=10000&cursor=${encodeURIComponent(page.next_cursor)}`;
  }
}

let month: string;
beforeAll(async () => {
  h = await startHarness({
    apps: [
      { name: 'alpha' },
      { name: 'beta', budgets: { day: { limitMinor: 1_000_000 } } },
      { name: 'idle' },
    ],
    adminTokens: [{ name: 'fin-anna', role: 'finance' }],
  });
  // The traffic below moves the clocks 16 minutes: start at noon in Moscow, so that its charges,
  // savings and served counters fall on one day of one month whenever the test runs.
  h.advance(msToNextMoscowNoon(h.gateway.clock.now()));
  month = localDate(h.gateway.clock.now(), ZONE).slice(0, 7);
});
afterAll(() => h.close());

describe('statements', () => {
  it('the current month equals the ledger, the savings and served counters on record', async () => {
    const [a, b, c] = knownInns(3, 4100);
    // Paid: three dossiers by alpha, one by beta.
    for (const inn of [a, b, c])
      expect((await h.call('alpha', `/v1/companies/${inn}`)).headers.get('x-charged-minor')).toBe('9900');
    // Cached reads after the windows closed: each saves the dossier price (cache).
    h.advance(16 * 60_000);
    for (const inn of [a, b, a]) {
      const r = await h.call('beta', `/v1/companies/${inn}`);
      expect(r.headers.get('x-cache')).toBe('HIT');
      expect(r.headers.get('x-charged-minor')).toBe('0');
    }
    const d = knownInns(1, 4200)[0]!;
    expect((await h.call('beta', `/v1/companies/${d}`)).headers.get('x-charged-minor')).toBe('9900');
    // A refusal is not served: a bad INN.
    expect((await h.call('alpha', '/v1/companies/123')).status).toBe(422);
    // A cap changed by a finance token during the month.
    const put = await fetch(`${h.gateway.url}/admin/budgets/alpha/day`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${h.adminTokens['fin-anna']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limit_minor: 50_000, soft_minor: null, reason: 'pilot month' }),
    });
    expect(put.status).toBe(200);

    const { status, body } = await statement(month);
    expect(status).toBe(200);
    expect(body.state).toBe('open');
    expect(body.from.endsWith('+03:00')).toBe(true);
    const bounds = monthBounds(month, ZONE)!;
    const ledger = await ledgerAll(bounds.fromMs, bounds.toMs);
    const byApp = (app: string) => ledger.filter((e) => e.app === app);
    const alpha = body.apps.find((p) => p.app === 'alpha')!;
    const beta = body.apps.find((p) => p.app === 'beta')!;
    const idle = body.apps.find((p) => p.app === 'idle')!;
    // Charges equal the ledger, per app and in total, and the emulator's own ledger.
    expect(alpha.charges.amount_minor).toBe(byApp('alpha').reduce((n, e) => n + e.amount_minor, 0));
    expect(alpha.charges).toEqual({
      count: 3,
      amount_minor: 29_700,
      by_kind: [{ kind: 'dossier', count: 3, amount_minor: 29_700 }],
    });
    expect(beta.charges.amount_minor).toBe(byApp('beta').reduce((n, e) => n + e.amount_minor, 0));
    expect(beta.charges.count).toBe(1);
    const truth = await h.ledger();
    expect(body.total.charges.amount_minor).toBe(truth.totals.amount_minor);
    expect(body.total.charges.count).toBe(truth.totals.count);
    expect(idle.charges.count).toBe(0);
    expect(idle.peak_day).toBeNull();
    // Savings: what Prometheus counted, and what the store keeps.
    const metrics = await (await fetch(`${h.gateway.url}/metrics`)).text();
    expect(beta.savings.by_reason.cache).toBe(3 * 9900);
    expect(beta.savings.total_minor).toBe(sumOf(metrics, 'cpgw_saved_minor_total', { app: 'beta' }));
    expect(body.total.savings.total_minor).toBe(sumOf(metrics, 'cpgw_saved_minor_total', {}));
    const today = localDate(h.gateway.clock.now(), ZONE);
    const [stored, served, unpaid] = await h.gateway.store.readCounters([
      savingsKey('beta', 'dossier', 'cache', today),
      servedKey('beta', today),
      unpaidKey('beta', today),
    ]);
    expect(stored!.spentMinor).toBe(3 * 9900);
    // Requests served: alpha 3 paid (the refusal is not served); beta 3 cached + 1 paid.
    expect(alpha.requests).toEqual({ served: 3, unpaid: 0, paid: 3, unpaid_share: 0 });
    expect(beta.requests).toEqual({ served: 4, unpaid: 3, paid: 1, unpaid_share: 0.75 });
    expect(served!.spentMinor).toBe(4);
    expect(unpaid!.spentMinor).toBe(3);
    expect(body.total.requests.served).toBe(7);
    // The peak day, caps in force and their change.
    expect(alpha.peak_day).toEqual({ day: today, amount_minor: 29_700, count: 3 });
    expect(alpha.caps.find((c) => c.period === 'day')).toMatchObject({
      limit_minor: 50_000,
      source: 'admin',
    });
    expect(beta.caps.find((c) => c.period === 'day')).toMatchObject({
      limit_minor: 1_000_000,
      source: 'config',
    });
    expect(alpha.cap_changes).toEqual([
      expect.objectContaining({
        actor: 'fin-anna',
        action: 'budget_set',
        period: 'day',
        after: expect.objectContaining({ limit_minor: 50_000 }),
      }),
    ]);
    expect(beta.cap_changes).toEqual([]);
    // CSV: the same figures, one a line.
    const csv = await (
      await fetch(`${h.gateway.url}/admin/statements/${month}?format=csv`, { headers: admin() })
    ).text();
    expect(csv.split('\n')[0]).toBe('app,section,item,count,amount_minor');
    expect(csv).toContain('alpha,charges,dossier,3,29700\n');
    expect(csv).toContain(`beta,savings,cache,,${3 * 9900}\n`);
    expect(csv).toContain(`_total,charges,total,${truth.totals.count},${truth.totals.amount_minor}\n`);
    // tz shows the times elsewhere; the figures stay.
    const utc = await statement(month, '?tz=UTC');
    expect(utc.body.from.endsWith('+00:00')).toBe(true);
    expect(Date.parse(utc.body.from)).toBe(bounds.fromMs);
    expect(utc.body.total.charges).toEqual(body.total.charges);
  });

  it('refuses a bad month with 422, a month not begun with 404, a bad tz with 422', async () => {
    for (const bad of ['2026-13', 'abc', '2026-1', '1999-12']) {
      const res = await fetch(`${h.gateway.url}/admin/statements/${bad}`, { headers: admin() });
      expect(res.status, bad).toBe(422);
      const body = (await res.json()) as {
        error: { code: string; details: { fields: Array<{ field: string }> } };
      };
      expect(body.error.details.fields[0]!.field).toBe('month');
    }
    const future = await fetch(`${h.gateway.url}/admin/statements/2999-01`, { headers: admin() });
    expect(future.status).toBe(404);
    expect(((await future.json()) as { error: { message: string } }).error.message).toContain('not begun');
    const tz = await fetch(`${h.gateway.url}/admin/statements/${month}?tz=Nowhere/Else`, {
      headers: admin(),
    });
    expect(tz.status).toBe(422);
  });

  it('a month is closed a day after it ended, and then frozen: later spend dated in it changes nothing', async () => {
    const bounds = monthBounds(month, ZONE)!;
    // The last hour of the month's grace day: still open.
    h.advance(bounds.closesAtMs - 3_600_000 - h.gateway.clock.now());
    expect((await statement(month)).body.state).toBe('open');
    h.advance(2 * 3_600_000);
    const closed = await statement(month);
    expect(closed.status).toBe(200);
    expect(closed.body.state).toBe('closed');
    const before = closed.body.total.charges.amount_minor;
    expect(before).toBeGreaterThan(0);
    // A charge dated inside the closed month (a late record) lands in its ledger range...
    await h.gateway.store.appendLedger({
      at: bounds.toMs - 60_000,
      app: 'alpha',
      operation: 'company',
      kind: 'dossier',
      inn: knownInns(1, 4300)[0]!,
      amountMinor: 9900,
      requestId: 'late-1',
    });
    const ledger = await ledgerAll(bounds.fromMs, bounds.toMs);
    expect(ledger.reduce((n, e) => n + e.amount_minor, 0)).toBe(before + 9900);
    // ...but the statement is the stored copy: the same figures, the same computed_at.
    h.advance(86_400_000);
    const again = await statement(month);
    expect(again.body).toEqual(closed.body);
    expect(again.body.total.charges.amount_minor).toBe(before);
  });
});
