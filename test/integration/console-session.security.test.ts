// The console's server side over real sockets (no browser): off (404) without an admin token;
// a wrong token or a bad body refused in the envelope with no cookie set; the cookie's flags;
// the strict CSP on every console answer, errors included; Secure over https; the session stands for its token at
// /admin/* (same role), ends after 30 idle minutes on the gateway's clock, and sign-out needs the
// CSRF token; no token, session id or CSRF token in any log line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_IDLE_MS } from '../../src/auth/admin-sessions.ts';
import { OffsetClock } from '../../src/clock.ts';
import { CONSOLE_CSP } from '../../src/console/console-routes.ts';
import { createLogger } from '../../src/logger.ts';
import { buildServer } from '../../src/server.ts';
import { createStore } from '../../src/store/create-store.ts';
import { UpstreamClient } from '../../src/upstream/upstream-client.ts';
import { type Harness, startHarness, UPSTREAM_KEY } from '../helpers/gateway-harness.ts';

describe('console sessions (server side)', () => {
  let h: Harness;
  const secrets: string[] = [];
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'crm' }],
      adminTokens: [
        { name: 'fin', role: 'finance' },
        { name: 'view', role: 'viewer' },
      ],
    });
    secrets.push(h.adminTokens.fin!, h.adminTokens.view!);
  });
  afterAll(() => h?.close());

  const url = (path: string) => `${h.gateway.url}${path}`;
  async function signIn(token: string) {
    const res = await fetch(url('/console/session'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    expect(res.status).toBe(201);
    const setCookie = res.headers.get('set-cookie')!;
    const body = (await res.json()) as { name: string; role: string; csrf_token: string };
    const cookie = setCookie.split(';')[0]!;
    secrets.push(cookie.split('=')[1]!, body.csrf_token);
    return { setCookie, cookie, body };
  }

  /** Another gateway on the harness's emulator with this config (the harness's, changed). */
  async function withServer(config: typeof h.config, run: (base: string) => Promise<void>) {
    const clock = new OffsetClock();
    const store = createStore({ clock, cacheMaxBytes: config.store.cacheMaxBytes });
    const upstream = new UpstreamClient({ url: h.emulator.url, apiKey: UPSTREAM_KEY, connections: 2 });
    const server = await buildServer({ config, upstream, store, clock, logger: createLogger('silent') });
    await server.listen({ host: '127.0.0.1', port: 0 });
    try {
      await run(`http://127.0.0.1:${(server.server.address() as { port: number }).port}`);
    } finally {
      await server.close();
      await upstream.close();
      await store.close();
    }
  }

  it('is off (404) on a gateway without any admin token', async () => {
    const admin = { ...h.config.admin, tokenHash: null, previousTokenHash: null, tokens: [] };
    await withServer({ ...h.config, admin }, async (base) => {
      for (const [method, path] of [
        ['GET', '/console/'],
        ['GET', '/console/app.js'],
        ['GET', '/console/session'],
        ['POST', '/console/session'],
      ] as const) {
        const res = await fetch(`${base}${path}`, { method, ...(method === 'POST' ? { body: '{}' } : {}) });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
      }
    });
  });

  it('marks the cookie Secure when the request came over https (behind a trusted proxy)', async () => {
    await withServer({ ...h.config, server: { ...h.config.server, trustProxy: true } }, async (base) => {
      const signIn = (proto: string) =>
        fetch(`${base}/console/session`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-proto': proto },
          body: JSON.stringify({ token: h.adminTokens.fin }),
        });
      expect((await signIn('https')).headers.get('set-cookie')).toMatch(/; Secure$/);
      expect((await signIn('http')).headers.get('set-cookie')).not.toMatch(/Secure/);
    });
  });

  it('serves the page, the module and the style sheet under the strict CSP', async () => {
    for (const [path, type] of [
      ['/console/', 'text/html'],
      ['/console/app.js', 'text/javascript'],
      ['/console/console.css', 'text/css'],
    ] as const) {
      const res = await fetch(url(path));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain(type);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    const html = await (await fetch(url('/console/'))).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son[a-z]+=|https?:\/\//i);
    const redirect = await fetch(url('/console'), { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([302, '/console/']);
    const missing = await fetch(url('/console/nothing-here'));
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
  });

  it('takes sign-in as JSON only (a cross-site form cannot sign a browser in)', async () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const res = await fetch(url('/console/session'), {
        method: 'POST',
        headers: { 'content-type': type },
        body: JSON.stringify({ token: h.adminTokens.fin }),
      });
      expect(res.status, type).toBe(422);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
  });

  it('refuses a wrong token or a bad body in the envelope and sets no cookie', async () => {
    for (const [body, status, code] of [
      [JSON.stringify({ token: 'cpgw_wrong' }), 401, 'unauthorized'],
      [JSON.stringify({ token: h.tokens.crm }), 401, 'unauthorized'], // an app token is not an admin token
      [JSON.stringify({}), 422, 'validation_failed'],
      ['{not json', 422, 'validation_failed'],
      ['', 422, 'validation_failed'],
    ] as const) {
      const res = await fetch(url('/console/session'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(res.status, body).toBe(status);
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
    }
  });

  it('a session is its token at /admin/* (same role), with CSRF on writes and on sign-out', async () => {
    const { setCookie, cookie, body } = await signIn(h.adminTokens.view!);
    expect(body).toMatchObject({ name: 'view', role: 'viewer' });
    expect(setCookie).toMatch(
      /^cpgw_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=1800$/,
    );
    expect((await fetch(url('/admin/budgets'), { headers: { cookie } })).status).toBe(200);
    const put = await fetch(url('/admin/budgets/crm/day'), {
      method: 'PUT',
      headers: { cookie, 'x-csrf-token': body.csrf_token, 'content-type': 'application/json' },
      body: JSON.stringify({ limit_minor: 1, reason: 'viewer write' }),
    });
    expect(put.status).toBe(403);
    expect(((await put.json()) as { error: { details: { right: string } } }).error.details.right).toBe(
      'budgets_write',
    );
    const who = (await (await fetch(url('/console/session'), { headers: { cookie } })).json()) as {
      csrf_token: string;
    };
    expect(who).toMatchObject({ name: 'view', role: 'viewer', csrf_token: body.csrf_token });
    // Sign-out without the CSRF token: refused, and the session still works.
    const noCsrf = await fetch(url('/console/session'), { method: 'DELETE', headers: { cookie } });
    expect(noCsrf.status).toBe(403);
    expect((await fetch(url('/admin/budgets'), { headers: { cookie } })).status).toBe(200);
    const out = await fetch(url('/console/session'), {
      method: 'DELETE',
      headers: { cookie, 'x-csrf-token': body.csrf_token },
    });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^cpgw_console=; .*Max-Age=0/);
    expect((await fetch(url('/admin/budgets'), { headers: { cookie } })).status).toBe(401);
    expect((await fetch(url('/console/session'), { headers: { cookie } })).status).toBe(401);
  });

  it('a write with a finance session and its CSRF token is audited under the token name', async () => {
    const { cookie, body } = await signIn(h.adminTokens.fin!);
    const put = await fetch(url('/admin/budgets/crm/month'), {
      method: 'PUT',
      headers: { cookie, 'x-csrf-token': body.csrf_token, 'content-type': 'application/json' },
      body: JSON.stringify({ limit_minor: 500_000, reason: 'console write' }),
    });
    expect(put.status).toBe(200);
    const audit = (await (
      await fetch(url('/admin/audit?action=budget_set'), { headers: { cookie } })
    ).json()) as {
      entries: Array<{ actor: string; role: string; reason: string }>;
    };
    expect(audit.entries.at(-1)).toMatchObject({ actor: 'fin', role: 'finance', reason: 'console write' });
  });

  it('ends after the idle timeout on the gateway clock; the write then is refused and not applied', async () => {
    const { cookie, body } = await signIn(h.adminTokens.fin!);
    h.gateway.clock.advance(SESSION_IDLE_MS - 60_000);
    expect((await fetch(url('/admin/budgets'), { headers: { cookie } })).status).toBe(200);
    h.gateway.clock.advance(SESSION_IDLE_MS + 1);
    const put = await fetch(url('/admin/budgets/crm/day'), {
      method: 'PUT',
      headers: { cookie, 'x-csrf-token': body.csrf_token, 'content-type': 'application/json' },
      body: JSON.stringify({ limit_minor: 7, reason: 'after expiry' }),
    });
    expect(put.status).toBe(401);
    const budgets = (await (
      await fetch(url('/admin/budgets'), { headers: { authorization: `Bearer ${h.adminTokens.fin}` } })
    ).json()) as { budgets: { crm: Array<{ period: string; limit_minor: number | null }> } };
    expect(budgets.budgets.crm.find((b) => b.period === 'day')!.limit_minor).not.toBe(7);
  });

  it('never logs a token, a session id or a CSRF token', () => {
    expect(h.logs.some((l) => l.includes('console sign-in'))).toBe(true);
    for (const secret of secrets) expect(h.logs.filter((l) => l.includes(secret))).toEqual([]);
  });
});
