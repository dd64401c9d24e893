// Issue 29 item 4: an app added by a reload gets its budget series at once (the shared gauges used
// to keep the app list they started with, so an added app had no cpgw_budget_* series and its
// alerts could not fire). In-process gateway, POST /admin/reload with a loader that returns what
// an edited config file would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { hasSample } from '../helpers/prom-text.ts';

describe('an app added by a reload', () => {
  let h: Harness;
  let added = false;
  const token = newToken();
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'crm', budgets: { day: { limitMinor: 5_000 } } }],
      loadConfig: (base) =>
        added
          ? {
              ...base,
              apps: [
                ...base.apps,
                {
                  ...base.apps[0]!,
                  name: 'newbie',
                  tokenHash: tokenHash(token),
                  budgets: { day: { limitMinor: 12_345 } },
                },
              ],
            }
          : base,
    });
  });
  afterAll(() => h.close());

  const metrics = async () => (await fetch(`${h.gateway.url}/metrics`)).text();

  it('has its budget series on the next scrape, with its cap', async () => {
    expect(hasSample(await metrics(), 'cpgw_budget_limit_minor', { app: 'newbie' })).toBe(false);
    added = true;
    const res = await fetch(`${h.gateway.url}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(res.status).toBe(200);
    expect(
      (await fetch(`${h.gateway.url}/v1/me`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(200);
    let text = await metrics();
    for (let i = 0; i < 40 && !hasSample(text, 'cpgw_budget_limit_minor', { app: 'newbie' }); i++) {
      await new Promise((r) => setTimeout(r, 50));
      text = await metrics();
    }
    expect(text).toMatch(/^cpgw_budget_limit_minor\{app="newbie",period="day"\} 12345$/m);
  });
});
