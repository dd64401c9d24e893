// Issue 28 item 5: the vendor's wallet as the independent check of the ledger. The gateway keeps
// a wallet snapshot from every /v1/me read; between two snapshots the balance should fall by what
// the ledger charged. A dossier bought with a SECOND key of the same account (outside the
// gateway) shows as unattributed spend, in cpgw_wallet_unattributed_minor_total and in
// GET /admin/reconciliation; a top-up (POST /_emulator/wallet) is reported as a top-up, never as
// spend. The emulator's wallet lags (--wallet-lag-seconds): as_of says when the balance held.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { hasSample, sumOf } from '../helpers/prom-text.ts';

const OUTSIDER = 'cabinet-key-7d1e';

describe('wallet reconciliation', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'crm' }],
      emulator: {
        apiKeys: ['emulator-upstream-key-0f3c9a;name=gateway', `${OUTSIDER};name=cabinet;account=1`],
        walletLagSeconds: 1,
      },
      config: { cost: { pricesRefreshSeconds: 1 } },
    });
  });
  afterAll(() => h.close());

  const admin = (path: string) =>
    fetch(`${h.gateway.url}${path}`, { headers: { authorization: `Bearer ${h.adminToken}` } });
  const metric = async (name: string) => {
    const text = await (await admin('/metrics')).text();
    return hasSample(text, name) ? sumOf(text, name) : undefined;
  };
  const balance = async () =>
    ((await (await h.direct('/v1/me')).json()) as { wallet: { balance_minor: number } }).wallet.balance_minor;

  it('a dossier bought with another key is unattributed; a top-up is not', async () => {
    const [a, b, c] = knownInns(3, 5150);
    // a first snapshot at the start balance is kept by now
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await h.call('crm', `/v1/companies/${a}`)).headers.get('x-charged-minor')).toBe('9900');
    const outside = await fetch(`${h.emulator.url}/v1/companies/${b}`, {
      headers: { authorization: `Bearer ${OUTSIDER}` },
    });
    expect(outside.headers.get('x-charged-minor')).toBe('9900');
    // /v1/me lags 1 s: read the balance once it shows both debits; the gateway's snapshots do too
    await new Promise((r) => setTimeout(r, 3_000));
    const afterSpend = await balance();
    await h.emu('/wallet', { account_id: 1, balance_minor: afterSpend + 50_000 });
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await h.call('crm', `/v1/companies/${c}`)).headers.get('x-charged-minor')).toBe('9900');

    const unattributed = await eventually(async () => {
      const v = await metric('cpgw_wallet_unattributed_minor_total');
      return v !== undefined && v > 0 ? v : null;
    }, 15_000);
    expect(unattributed).toBe(9_900);
    await eventually(async () => ((await metric('cpgw_wallet_topups_minor_total')) ?? 0) > 0, 15_000);
    expect(await metric('cpgw_wallet_topups_minor_total')).toBe(50_000);

    const rec = (await (await admin('/admin/reconciliation')).json()) as {
      totals: { unattributed_minor: number; top_up_minor: number };
      days: Array<{ day: string; ledger_minor: number; unattributed_minor: number }>;
    };
    expect(rec.totals.unattributed_minor).toBe(9_900);
    expect(rec.totals.top_up_minor).toBe(50_000);
    expect(rec.days.reduce((n, d) => n + d.unattributed_minor, 0)).toBe(9_900);
    const csv = await (await admin('/admin/reconciliation?format=csv')).text();
    expect(csv.split('\n')[0]).toBe(
      'day,vendor_debit_minor,ledger_minor,unattributed_minor,top_up_minor,balance_minor',
    );
    expect((await admin('/admin/reconciliation?format=xml')).status).toBe(422);
  });
});
