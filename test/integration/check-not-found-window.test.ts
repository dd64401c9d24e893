// A check answered 200 at once whose registers did not find the company ({"found": false})
// opens no coverage window in the gateway's books, as none opens upstream (the emulator's check
// registry opens one only when found); one that found its company does. The charge is recorded
// either way (the check is paid at creation).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns, unknownInn } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

describe('POST /v1/check answered 200 at once', () => {
  let h: Harness;
  beforeAll(async () => {
    // Collection shorter than the upstream's wait: the check answers 200 at creation.
    h = await startHarness({ emulator: { checkSeconds: 0.05, checkWaitSeconds: 2 } });
  });
  afterAll(() => h.close());

  const windows = async () =>
    (
      (await (
        await fetch(`${h.gateway.url}/admin/windows`, {
          headers: { authorization: `Bearer ${h.adminToken}` },
        })
      ).json()) as { windows: Array<{ inn: string; dossier_until: string | null }> }
    ).windows;

  it('found: false opens no window; found: true does', async () => {
    const missing = unknownInn();
    const none = await h.call('alpha', '/v1/check', {
      method: 'POST',
      body: JSON.stringify({ inn: missing }),
    });
    expect(none.status).toBe(200);
    expect(((await none.json()) as { found: boolean }).found).toBe(false);
    expect(none.headers.get('x-window-expires')).toBeNull();
    expect((await windows()).find((w) => w.inn === missing)).toBeUndefined();

    const [inn] = knownInns(1, 760);
    const found = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(found.status).toBe(200);
    expect(((await found.json()) as { found: boolean }).found).toBe(true);
    expect(found.headers.get('x-window-expires')).not.toBeNull();
    expect((await windows()).find((w) => w.inn === inn)?.dossier_until).not.toBeNull();

    const ledger = (await h.emu('/ledger')) as { entries: Array<{ inn: string }> };
    expect(ledger.entries.filter((e) => e.inn === missing || e.inn === inn)).toHaveLength(2);
    expect((await h.ledger()).entries.filter((e) => e.inn === missing || e.inn === inn)).toHaveLength(2);
  });
});
