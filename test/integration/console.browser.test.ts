// The console in a real Chromium (Debian's /usr/bin/chromium, driven by playwright-core) against
// a real gateway and emulator: sign in as finance, read the overview, change a cap with a reason
// (and have a stale edit refused with the current values), see the audit entry, the next
// over-cap paid call refused 402, the CSV link give what /admin/ledger gives, no CSRF header = 403
// and nothing changed, a viewer sees no edit controls (and the API refuses it), sign-out ends the
// session (old cookie: 401), an idle session sends the page back to sign-in. axe-core finds no
// serious or critical violation on any page, and Tab reaches every control. CPGW_CONSOLE_SCREENSHOTS=1 writes docs/console/*.png (1280x800).
// Without Chromium the file skips loudly; under REQUIRE_CHROMIUM=1 it fails instead.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/console/console-routes.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const CHROMIUM = '/usr/bin/chromium';
const required = process.env.REQUIRE_CHROMIUM === '1';
const present = existsSync(CHROMIUM);
if (!present && !required)
  console.warn(
    `\n*** console.browser.test.ts SKIPPED: ${CHROMIUM} is missing (apt-get install -y chromium); ` +
      'set REQUIRE_CHROMIUM=1 to make this a failure ***\n',
  );
const SHOTS = process.env.CPGW_CONSOLE_SCREENSHOTS === '1';
const SHOT_DIR = fileURLToPath(new URL('../../docs/console/', import.meta.url));
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const DOSSIER = 9900;

describe.skipIf(!present && !required)('console in Chromium', () => {
  let h: Harness;
  let browser: Browser;
  let next = 7100;
  const paidCall = (app: string) => h.call(app, `/v1/companies/${knownInns(1, next++)[0]}`);
  const admin = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${h.adminTokens.fin}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const crmDay = async () => {
    const all = (await (await admin('GET', '/admin/budgets')).json()) as {
      budgets: Record<string, Array<{ period: string; limit_minor: number; version: number }>>;
    };
    return all.budgets.crm!.find((b) => b.period === 'day')!;
  };

  beforeAll(async () => {
    if (!present)
      throw new Error(`REQUIRE_CHROMIUM=1 but ${CHROMIUM} is missing (apt-get install -y chromium)`);
    h = await startHarness({
      apps: [
        {
          name: 'crm',
          budgets: { day: { limitMinor: 100 * DOSSIER }, month: { limitMinor: 10 * DOSSIER } },
        },
        { name: 'hr', budgets: { month: { limitMinor: 2 * DOSSIER, softMinor: DOSSIER } } },
      ],
      adminTokens: [
        { name: 'fin', role: 'finance' },
        { name: 'view', role: 'viewer' },
      ],
    });
    for (const app of ['crm', 'crm', 'hr']) expect((await paidCall(app)).status).toBe(200);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    if (SHOTS) mkdirSync(SHOT_DIR, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  /** A fresh browser profile; every CSP report the page makes is collected. */
  async function open(): Promise<{ context: BrowserContext; page: Page; cspErrors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const cspErrors: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    return { context, page, cspErrors };
  }
  async function signIn(page: Page, token: string) {
    await page.goto(`${h.gateway.url}/console/`);
    await page.locator('#token').fill(token);
    await page.keyboard.press('Enter');
  }
  async function show(page: Page, hash: string, name: string) {
    await page.evaluate((x) => {
      location.hash = x;
    }, hash);
    await page.locator(`#page[data-page="${name}"]:not([aria-busy])`).waitFor();
  }
  /** axe-core's serious and critical violations (evaluated over CDP: the CSP forbids inline scripts). */
  async function axe(page: Page): Promise<string[]> {
    await page.evaluate(AXE);
    return page.evaluate(async () => {
      const w = window as unknown as {
        axe: {
          run(
            el: Document,
            o: object,
          ): Promise<{
            violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
          }>;
        };
      };
      const r = await w.axe.run(document, { resultTypes: ['violations'] });
      return r.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
  }
  async function shot(page: Page, name: string) {
    if (SHOTS) await page.screenshot({ path: `${SHOT_DIR}${name}.png` });
  }
  /** Every link, button, input and select on the page gets the focus by Tab alone. */
  async function everyControlByKeyboard(page: Page) {
    const total = await page.evaluate(() => {
      const all = [...document.querySelectorAll('a[href], button, input, select')].filter(
        (e) => (e as HTMLElement).offsetParent !== null,
      );
      all.forEach((e, i) => {
        e.setAttribute('data-kbd', String(i));
      });
      (document.activeElement as HTMLElement | null)?.blur();
      return all.length;
    });
    const seen = new Set<string>();
    // A date input takes one Tab per field (day, month, year): allow a few per control.
    for (let i = 0; i < total * 4 && seen.size < total; i++) {
      await page.keyboard.press('Tab');
      const id = await page.evaluate(() => document.activeElement?.getAttribute('data-kbd') ?? null);
      if (id !== null) seen.add(id);
    }
    expect(seen.size).toBe(total);
  }

  it('a wrong token is refused on the sign-in page and nothing else is shown', async () => {
    const { context, page } = await open();
    const res = await page.goto(`${h.gateway.url}/console/`);
    expect(res!.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    await shot(page, 'signin');
    expect(await axe(page)).toEqual([]);
    await signIn(page, 'cpgw_not-a-token');
    await expect.poll(() => page.locator('#signin-error').textContent()).toBe('This token is not accepted.');
    expect(await page.locator('#nav').isVisible()).toBe(false);
    await context.close();
  });

  it('finance: overview, cap change with reason, stale edit, audit, 402, CSV, CSRF, sign-out', async () => {
    const { context, page, cspErrors } = await open();
    await signIn(page, h.adminTokens.fin!);
    await page.locator('#page[data-page="overview"]:not([aria-busy])').waitFor();
    expect(await page.locator('#who').textContent()).toBe('Signed in as fin (finance)');
    // The token is not kept in the browser: no storage, and the session cookie is HttpOnly.
    const stored = await page.evaluate(
      () => JSON.stringify({ ...localStorage, ...sessionStorage }) + document.cookie,
    );
    expect(stored).not.toContain(h.adminTokens.fin);
    expect(stored).not.toContain('cpgw_console');
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({
      name: 'cpgw_console',
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: false,
    });

    // Overview: 2 dossiers for crm (198 ₽ of 9 900 ₽ today), 1 for hr, 3 in total.
    const crmRow = (await page.locator('tr[data-app="crm"]').innerText()).replace(/\s/g, '');
    expect(crmRow).toContain('198,00₽');
    expect(crmRow).toContain('9900,00₽');
    expect(crmRow).toContain('9702,00₽');
    expect((await page.locator('tr[data-app="total"]').innerText()).replace(/\s/g, '')).toContain('297,00₽');
    expect(await page.locator('svg.chart desc').textContent()).toMatch(/crm: 198,00\s₽ of 990,00\s₽/);
    // Savings this month (the statement): a row per app and the total, with the unpaid share.
    expect(await page.locator('tr[data-savings="Total"] [data-field="unpaid-share"]').textContent()).toMatch(
      /^(\d+ %|—)$/,
    );
    // The wallet section reads /admin/reconciliation: nothing unattributed (every charge is the gateway's).
    expect((await page.locator('dd[data-field="unattributed"]').innerText()).replace(/\s/g, '')).toBe(
      '0,00₽',
    );
    expect(await axe(page)).toEqual([]);
    await shot(page, 'overview');
    await everyControlByKeyboard(page);

    // Budgets: lower crm's day cap to 250 ₽ with a reason; the form shows the version it edits.
    await show(page, '#/budgets', 'budgets');
    expect(await axe(page)).toEqual([]);
    await everyControlByKeyboard(page);
    await page.locator('button[data-edit="crm/day"]').click();
    expect(await page.locator('#edit-version').textContent()).toContain('version 0');
    await page.locator('#cap').fill('250');
    await page.locator('#reason').fill('Q4 freeze from the console');
    expect(await axe(page)).toEqual([]);
    await shot(page, 'budgets');
    await page.locator('#budget-form button[type="submit"]').click();
    await expect.poll(() => page.locator('#budget-status').textContent()).toContain('version 1');
    expect(await crmDay()).toMatchObject({ limit_minor: 25_000, version: 1 });
    const refused = await paidCall('crm');
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');

    // A stale edit: someone else moves the budget while the form is open; refused, current shown.
    await page.locator('button[data-edit="crm/day"]').click();
    expect(await page.locator('#edit-version').textContent()).toContain('version 1');
    const other = await admin(
      'PUT',
      '/admin/budgets/crm/day',
      { limit_minor: 30_000, reason: 'other desk' },
      { 'if-match': '1' },
    );
    expect(other.status).toBe(200);
    await page.locator('#cap').fill('5000');
    await page.locator('#reason').fill('stale attempt');
    await page.locator('#budget-form button[type="submit"]').click();
    await expect
      .poll(() => page.locator('#edit-error').textContent())
      .toMatch(/nothing was saved.*cap 300,00\s₽.*version 2/);
    expect(await page.locator('#edit-version').textContent()).toContain('version 2');
    expect(await crmDay()).toMatchObject({ limit_minor: 30_000, version: 2 });

    // A write without (or with a wrong) CSRF token: 403 and nothing changed.
    const forged = await page.evaluate(async () => {
      const put = (headers: Record<string, string>) =>
        fetch('/admin/budgets/crm/day', {
          method: 'PUT',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ limit_minor: 99_999_999, reason: 'forged' }),
        }).then(async (r) => [r.status, ((await r.json()) as { error: { code: string } }).error.code]);
      return [await put({}), await put({ 'x-csrf-token': 'not-the-token' })];
    });
    expect(forged).toEqual([
      [403, 'feature_unavailable'],
      [403, 'feature_unavailable'],
    ]);
    expect(await crmDay()).toMatchObject({ limit_minor: 30_000, version: 2 });

    // Audit trail: the console's change with its reason, by fin (finance).
    await show(page, '#/audit', 'audit');
    await everyControlByKeyboard(page);
    const row = page.locator('#audit tr', { hasText: 'Q4 freeze from the console' });
    expect(await row.count()).toBe(1);
    const cells = await row.locator('td').allInnerTexts();
    expect(cells.slice(1, 5)).toEqual(['fin', 'finance', 'budget_set', 'budget:crm:day']);
    expect(await page.locator('#audit', { hasText: 'forged' }).count()).toBe(0);
    expect(await axe(page)).toEqual([]);
    await shot(page, 'audit');

    // Ledger: crm's 2 charges; the CSV link gives exactly what /admin/ledger gives for the range.
    await show(page, '#/ledger?app=crm', 'ledger');
    expect(await page.locator('#ledger tbody tr').count()).toBe(2);
    const href = (await page.locator('#ledger-csv').getAttribute('href'))!;
    expect(href).toMatch(/^\/admin\/ledger\?from=.*&to=.*&app=crm&format=csv$/);
    const viaPage = await page.evaluate((u) => fetch(u).then((r) => r.text()), href);
    const viaApi = await (await admin('GET', href)).text();
    expect(viaPage).toBe(viaApi);
    expect(viaApi.trim().split('\n')).toHaveLength(3);
    // Kind and INN filters: the API's, through the page's form (one of crm's two companies).
    const firstInn = (await page.locator('#ledger tbody tr').first().locator('td').nth(4).innerText()).trim();
    await page.locator('#ledger-inn').fill(firstInn);
    await page.locator('#ledger-kind').selectOption('dossier');
    await page.locator('#ledger-filter button[type="submit"]').click();
    await page.locator(`#page[data-page="ledger"]:not([aria-busy])`).waitFor();
    await expect.poll(() => page.locator('#ledger tbody tr').count()).toBe(1);
    expect(await page.locator('#ledger-csv').getAttribute('href')).toContain(
      `&kind=dossier&inn=${firstInn}&format=csv`,
    );
    await show(page, '#/ledger?app=crm', 'ledger');
    expect(await axe(page)).toEqual([]);
    await shot(page, 'ledger');
    await everyControlByKeyboard(page);

    // Statements: this month's, open, equal to the API's; its CSV link is the API's CSV.
    await show(page, '#/statements', 'statements');
    const month = (await page.locator('#st-month').inputValue())!;
    const api = (await (await admin('GET', `/admin/statements/${month}`)).json()) as {
      state: string;
      apps: Array<{ app: string; charges: { count: number } }>;
      total: { charges: { count: number } };
    };
    expect(api.state).toBe('open');
    const crmCells = await page.locator('#statement tr[data-app="crm"] td').allInnerTexts();
    expect(Number(crmCells[0])).toBe(api.apps.find((a) => a.app === 'crm')!.charges.count);
    expect(Number((await page.locator('#statement tr[data-app="Total"] td').allInnerTexts())[0])).toBe(
      api.total.charges.count,
    );
    const stCsv = (await page.locator('#page a[download]').getAttribute('href'))!;
    expect(await page.evaluate((u) => fetch(u).then((r) => r.status), stCsv)).toBe(200);
    expect(await axe(page)).toEqual([]);
    await shot(page, 'statements');

    // Sign out: the old cookie is refused by the admin API.
    const sessionCookie = `cpgw_console=${(await context.cookies())[0]!.value}`;
    expect(
      (await fetch(`${h.gateway.url}/admin/budgets`, { headers: { cookie: sessionCookie } })).status,
    ).toBe(200);
    await page.locator('#signout').click();
    await page.locator('#signin').waitFor();
    expect(await page.locator('#signin-error').textContent()).toBe('Signed out.');
    expect(
      (await fetch(`${h.gateway.url}/admin/budgets`, { headers: { cookie: sessionCookie } })).status,
    ).toBe(401);
    expect(cspErrors).toEqual([]);
    await context.close();
  });

  it('viewer: no edit controls, and the API refuses its session writes', async () => {
    const { context, page } = await open();
    await signIn(page, h.adminTokens.view!);
    await page.locator('#page[data-page="overview"]:not([aria-busy])').waitFor();
    await show(page, '#/budgets', 'budgets');
    expect(await page.locator('#budgets tbody tr').count()).toBeGreaterThan(0);
    expect(await page.locator('button[data-edit], #budget-form').count()).toBe(0);
    const write = await page.evaluate(async () => {
      const { csrf_token } = (await (await fetch('/console/session')).json()) as { csrf_token: string };
      const r = await fetch('/admin/budgets/crm/day', {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf_token },
        body: JSON.stringify({ limit_minor: 1, reason: 'viewer' }),
      });
      return [r.status, ((await r.json()) as { error: { details: { role: string } } }).error.details.role];
    });
    expect(write).toEqual([403, 'viewer']);
    expect(await crmDay()).toMatchObject({ limit_minor: 30_000, version: 2 });
    // Replicas: the heartbeat of this gateway, agreeing with itself, and its health.
    await show(page, '#/replicas', 'replicas');
    expect(await page.locator('[data-field="agree"]').textContent()).toMatch(
      /^All 1 live replicas run the same/,
    );
    expect(await page.locator('tr[data-replica]').count()).toBe(1);
    expect(await page.locator('dd[data-field="status"]').textContent()).toMatch(/ok|degraded/);
    expect(await axe(page)).toEqual([]);
    await shot(page, 'replicas');
    // 31 idle minutes on the gateway's clock: the next page load finds the session gone and
    // goes back to sign-in. (Last in the file: the clock stays moved.)
    h.gateway.clock.advance(31 * 60_000);
    await page.evaluate(() => {
      location.hash = '#/audit';
    });
    await page.locator('#signin').waitFor();
    expect(await page.locator('#signin-error').textContent()).toContain('Your session has ended');
    expect(await page.locator('#nav').isVisible()).toBe(false);
    await context.close();
  });
});
