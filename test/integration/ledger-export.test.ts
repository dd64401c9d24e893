// GET /admin/ledger never truncates (issue 29 item 5): 25,000 ledger records (three in most
// milliseconds, so pages end mid-millisecond) paged through with limit 1000 come back each
// exactly once with the exact total, the CSV export streams all of them with the same total,
// times carry the offset of tz (default cost.timeZone) beside at_ms, and bad input is refused in
// the envelope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const N = 25_000;
let h: Harness;
let from: number;
let to: number;
let expectedTotal = 0;
const expectedIds: string[] = [];
const admin = () => ({ authorization: `Bearer ${h.adminToken}` });

beforeAll(async () => {
  h = await startHarness({
    store: (clock) => new MemoryStore({ clock, cacheMaxBytes: 64 * 1024 * 1024, ledgerMaxRecords: 200_000 }),
  });
  const now = h.gateway.clock.now();
  from = now - 86_400_000;
  to = now;
  for (let i = 0; i < N; i++) {
    const app = ['alpha', 'beta', 'gamma'][i % 3]!;
    const amountMinor = 100 + (i % 97);
    expectedTotal += amountMinor;
    expectedIds.push(
      await h.gateway.store.appendLedger({
        at: from + Math.floor(i / 3),
        app,
        operation: 'company',
        kind: i % 4 === 0 ? 'requisites' : 'dossier',
        inn: i % 10 === 0 ? '7736050003' : '7707083893',
        amountMinor,
        upstreamRequestId: `up-${i}`,
        requestId: `req-${i}`,
        idempotencyKey: i % 5 === 0 ? `key,"${i}"` : null,
      }),
    );
  }
});
afterAll(() => h.close());

interface Page {
  count: number;
  total_minor: number;
  complete: boolean;
  next_cursor: string | null;
  time_zone: string;
  entries: Array<{ id: string; app: string; time: string; at_ms: number; at: number; amount_minor: number }>;
}

async function page(query: string): Promise<Page> {
  const res = await fetch(`${h.gateway.url}/admin/ledger?${query}`, { headers: admin() });
  expect(res.status).toBe(200);
  return (await res.json()) as Page;
}

describe('ledger export', () => {
  it('pages with limit 1000 return every entry exactly once, and the page totals add up', async () => {
    const seen: string[] = [];
    let total = 0;
    let pages = 0;
    let p = await page(`from=${from}&to=${to}&limit=1000`);
    for (;;) {
      pages++;
      expect(p.count).toBe(p.entries.length);
      expect(p.total_minor).toBe(p.entries.reduce((n, e) => n + e.amount_minor, 0));
      seen.push(...p.entries.map((e) => e.id));
      total += p.total_minor;
      if (p.complete) break;
      expect(p.count).toBe(1000);
      expect(p.next_cursor).toEqual(expect.any(String));
      p = await page(`limit=1000&cursor=${encodeURIComponent(p.next_cursor!)}`);
    }
    expect(p.next_cursor).toBeNull();
    expect(pages).toBe(N / 1000);
    expect(seen).toEqual(expectedIds);
    expect(new Set(seen).size).toBe(N);
    expect(total).toBe(expectedTotal);
  });

  it('the default page is 1000 and says more remain; an app filter pages too', async () => {
    const first = await page(`from=${from}&to=${to}`);
    expect(first.count).toBe(1000);
    expect(first.complete).toBe(false);
    let n = 0;
    let p = await page(`from=${from}&to=${to}&app=beta&limit=2500`);
    for (;;) {
      expect(p.entries.every((e) => e.app === 'beta')).toBe(true);
      n += p.count;
      if (p.complete) break;
      p = await page(`limit=2500&app=beta&cursor=${encodeURIComponent(p.next_cursor!)}`);
    }
    expect(n).toBe(expectedIds.filter((_, i) => i % 3 === 1).length);
  });

  it('streams the whole range as CSV with the exact total, times in the zone, at_ms in UTC ms', async () => {
    const res = await fetch(`${h.gateway.url}/admin/ledger?format=csv&from=${from}&to=${to}`, {
      headers: admin(),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/csv');
    const text = await res.text();
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'time,app,operation,kind,inn,amount_minor,upstream_request_id,request_id,idempotency_key,reconciled,at_ms',
    );
    expect(lines.length - 1).toBe(N);
    let total = 0;
    for (const line of lines.slice(1)) {
      // The idempotency key of every fifth row is quoted (it has a comma and quotes): amount is
      // the sixth cell either way, at_ms the last.
      const cells = line.split(',');
      total += Number(cells[5]);
      const atMs = Number(cells[cells.length - 1]);
      expect(Date.parse(cells[0]!)).toBe(atMs);
    }
    expect(total).toBe(expectedTotal);
    // cost.timeZone defaults to Europe/Moscow: +03:00.
    expect(lines[1]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+03:00,alpha,company,requisites,7736050003,100,/,
    );
    expect(lines[1]).toContain(`,"key,""0""",false,${from}`);
  });

  it('tz sets the offset of the times; at_ms stays the UTC epoch ms', async () => {
    const ny = await page(`from=${from}&to=${to}&limit=3&tz=America/New_York`);
    expect(ny.time_zone).toBe('America/New_York');
    const e = ny.entries[0]!;
    expect(e.at_ms).toBe(from);
    expect(e.time).toMatch(/-0[45]:00$/);
    expect(Date.parse(e.time)).toBe(from);
    const utc = await page(`from=${from}&to=${to}&limit=1&tz=UTC`);
    expect(utc.entries[0]!.time).toBe(new Date(from).toISOString().replace('Z', '+00:00'));
    const moscow = await page(`from=${from}&to=${to}&limit=1`);
    expect(moscow.time_zone).toBe('Europe/Moscow');
    expect(moscow.entries[0]!.time.endsWith('+03:00')).toBe(true);
  });

  it('filters by kind and INN, in pages (the cursor keeps the filter) and in the CSV', async () => {
    const want = (i: number) => i % 4 === 0 && i % 10 === 0; // requisites of 7736050003
    const expected = expectedIds.filter((_, i) => want(i));
    const got: string[] = [];
    let url = `${h.gateway.url}/admin/ledger?from=${from}&to=${to + 1}&kind=requisites&inn=7736050003&limit=100`;
    for (;;) {
      const page = (await (await fetch(url, { headers: admin() })).json()) as {
        entries: Array<{ id: string; kind: string; inn: string }>;
        next_cursor: string | null;
      };
      for (const e of page.entries) {
        expect([e.kind, e.inn]).toEqual(['requisites', '7736050003']);
        got.push(e.id);
      }
      if (!page.next_cursor) break;
      url = `${h.gateway.url}/admin/ledger?cursor=${page.next_cursor}&limit=100`;
    }
    expect(got).toEqual(expected);
    const csv = await (
      await fetch(
        `${h.gateway.url}/admin/ledger?from=${from}&to=${to + 1}&kind=requisites&inn=7736050003&format=csv`,
        {
          headers: admin(),
        },
      )
    ).text();
    expect(csv.trimEnd().split('\n')).toHaveLength(expected.length + 1);
    const bad = await fetch(`${h.gateway.url}/admin/ledger?kind=gold&inn=123`, { headers: admin() });
    expect(bad.status).toBe(422);
    const fields = ((await bad.json()) as { error: { details: { fields: Array<{ field: string }> } } }).error
      .details.fields;
    expect(fields.map((f) => f.field).sort()).toEqual(['inn', 'kind']);
  });

  it('refuses a bad tz, limit or cursor with 422 naming the field', async () => {
    const cases: Array<[string, string]> = [
      ['tz=Mars/Olympus', 'tz'],
      ['limit=0', 'limit'],
      ['limit=10001', 'limit'],
      ['limit=abc', 'limit'],
      ['cursor=bm9wZQ', 'cursor'],
      ['format=csv&limit=10', 'limit'],
      ['format=xml', 'format'],
    ];
    for (const [query, field] of cases) {
      const res = await fetch(`${h.gateway.url}/admin/ledger?${query}`, { headers: admin() });
      expect(res.status, query).toBe(422);
      const body = (await res.json()) as {
        error: { code: string; details: { fields: Array<{ field: string }> } };
      };
      expect(body.error.code).toBe('validation_failed');
      expect(body.error.details.fields.map((f) => f.field)).toContain(field);
    }
    const ok = await fetch(`${h.gateway.url}/admin/ledger?limit=10000`, { headers: admin() });
    expect(ok.status).toBe(200);
  });
});
