// Rate limits over real HTTP, on fixed minute counters aligned to the emulator clock: the
// key budget (60) and its headers, search (20 per account, also spends the key budget),
// suggest (120 per account, does not), cold checks (2 per minute) and the persons daily
// distinct-INN limit. Every refusal is 429 with Retry-After and spends nothing.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, knownInns, personInns, startHarness } from './emulator-harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    checkSeconds: 60,
    apiKeys: ['emulator-key', 'second-key', 'other-account;account=2'],
    limits: { personsPerDay: 3 },
  });
});
afterAll(() => h.close());
beforeEach(async () => {
  await h.control('POST', '/reset');
  await alignToMinute();
});

/** Moves the emulator clock to one second past the next minute boundary. */
async function alignToMinute(): Promise<number> {
  const now: number = (await h.control('GET', '/clock')).json.now_ms;
  const target = (Math.floor(now / 60_000) + 1) * 60_000 + 1000;
  await h.advance(target - now);
  return target;
}

describe('rate limits', () => {
  it('key budget: 60 a minute with X-RateLimit-* headers, then 429 rate_limited with Retry-After', async () => {
    const now: number = (await h.control('GET', '/clock')).json.now_ms;
    const minuteEnd = (Math.floor(now / 60_000) + 1) * 60_000;
    for (let i = 1; i <= 60; i++) {
      const r = await h.get('/v1/me');
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('60');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(60 - i));
      expect(r.headers.get('x-ratelimit-reset')).toBe(String(minuteEnd / 1000));
    }
    const refused = await h.get('/v1/me');
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(50);
    expect(retryAfter).toBeLessThanOrEqual(59);
    expect(refused.headers.get('x-ratelimit-remaining')).toBeNull();
    expect((await h.get('/v1/me', { key: 'second-key' })).status).toBe(200);
    await h.advance(retryAfter * 1000);
    const again = await h.get('/v1/me');
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('search: 20 a minute per account shared by its keys; the headers show the key budget', async () => {
    for (let i = 1; i <= 20; i++) {
      const r = await h.get('/v1/search?q=%D1%80%D0%BE%D0%B3', {
        key: i % 2 ? 'emulator-key' : 'second-key',
      });
      expect(r.status).toBe(200);
      if (i === 19) expect(r.headers.get('x-ratelimit-remaining')).toBe(String(60 - 10));
    }
    const refused = await h.get('/v1/search?q=abc', { key: 'second-key' });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await h.get('/v1/search?q=abc', { key: 'other-account' })).status).toBe(200);
    const me = await h.get('/v1/me');
    expect(me.headers.get('x-ratelimit-remaining')).toBe(String(60 - 10 - 1));
  });

  it('suggest: 120 a minute per account and does not spend the key budget', async () => {
    for (let i = 1; i <= 120; i++) {
      const r = await h.get('/v1/suggest?q=7707');
      expect(r.status).toBe(200);
      expect(r.json.items.length).toBeLessThanOrEqual(10);
    }
    const refused = await h.get('/v1/suggest?q=7707', { key: 'second-key' });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('rate_limited');
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect((await h.get('/v1/me')).headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('cold checks: two a minute per account; the third is 429 and charges nothing', async () => {
    const [a, b, c] = knownInns(3, 900);
    expect((await h.post('/v1/check', { inn: a })).status).toBe(202);
    expect((await h.post('/v1/check', { inn: b })).status).toBe(202);
    const refused = await h.post('/v1/check', { inn: c });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(50);
    expect((await h.control('GET', '/ledger')).json.totals.count).toBe(2);
    await h.advance(60_000);
    expect((await h.post('/v1/check', { inn: c })).status).toBe(202);
    // a and b finished collecting (60 s): checking them again is warm and not counted
    expect((await h.post('/v1/check', { inn: a })).status).toBe(200);
  });

  it('persons: a daily limit of distinct INNs; repeats do not spend it; 429 quota_exceeded until the next day', async () => {
    const people = personInns(5, 60);
    for (const inn of people.slice(0, 3)) expect((await h.get(`/v1/persons/${inn}`)).status).toBe(200);
    expect((await h.get(`/v1/persons/${people[0]}`)).status).toBe(200);
    const refused = await h.get(`/v1/persons/${people[3]}`);
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('quota_exceeded');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect((await h.get(`/v1/persons/${people[3]}`, { key: 'other-account' })).status).toBe(200);
    await h.advance(retryAfter * 1000);
    expect((await h.get(`/v1/persons/${people[3]}`)).status).toBe(200);
  });

  it('the request log records every upstream call with its emulator time and status', async () => {
    await h.get('/v1/me');
    await h.get('/v1/search?q=abc');
    await h.get('/v1/companies/7707083894');
    const log = (await h.control('GET', '/requests')).json;
    expect(log.counts).toMatchObject({ me: 1, search: 1, company: 1 });
    expect(log.requests.map((r: { status: number }) => r.status)).toEqual([200, 200, 422]);
    const search = (await h.control('GET', '/requests?route=search')).json.requests;
    expect(search).toHaveLength(1);
    expect(search[0].at_ms).toBeGreaterThan(0);
  });
});
