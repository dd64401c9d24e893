// Never pay twice for the same thing: a connection dropped after the charge is retried with
// the same idempotency key (one charge); a client retrying POST /v1/check with its key pays
// once; two apps using the same client key do not collide.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ emulator: { checkSeconds: 0.05, checkWaitSeconds: 2 } });
});
afterAll(() => h.close());

const chargesFor = async (inn: string) => (await h.ledger()).entries.filter((e) => e.inn === inn);

describe('idempotency keys', () => {
  it('the emulator dropping the connection after charging, then the gateway retrying: one charge', async () => {
    const [inn] = knownInns(1, 400);
    await h.emu('/faults', { route: 'company', count: 1, drop_after_charge: true });
    const res = await h.call('alpha', `/v1/companies/${inn}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('9900');
    const charges = await chargesFor(inn!);
    expect(charges).toHaveLength(1);
    // The gateway's own key for this logical request: its request id (unique per process and
    // across processes), within the upstream's 64 characters.
    expect(charges[0]!.idempotency_key).toBe(`gw1r-${res.headers.get('x-request-id')}`);
    expect(charges[0]!.idempotency_key!.length).toBeLessThanOrEqual(64);
    const requests = (await h.emu('/requests?route=company')) as { requests: Array<{ path: string }> };
    expect(requests.requests.filter((r) => r.path.includes(inn!)).length).toBe(2);
  });

  it('retries 503 billing_unavailable with backoff (a fresh key: no charge was made) and pays once', async () => {
    const [inn] = knownInns(1, 410);
    await h.emu('/faults', { route: 'requisites', count: 2, status: 503 });
    const res = await h.call('beta', `/v1/requisites/${inn}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('1500');
    expect(await chargesFor(inn!)).toHaveLength(1);
  });

  it('a client retrying POST /v1/check with the same Idempotency-Key pays once', async () => {
    const [inn] = knownInns(1, 420);
    const send = () =>
      h.call('alpha', '/v1/check', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'order-42' },
        body: JSON.stringify({ inn }),
      });
    const first = await send();
    const second = await send();
    expect([200, 202]).toContain(first.status);
    expect(second.status).toBe(first.status);
    expect(first.headers.get('x-charged-minor')).toBe('19900');
    expect(second.headers.get('x-charged-minor')).toBe('0');
    const charges = await chargesFor(inn!);
    expect(charges).toHaveLength(1);
    expect(charges[0]!.idempotency_key).toMatch(/^gw1-/);
    expect(charges[0]!.idempotency_key).not.toContain('order-42');
  });

  it('two apps using the same client key do not collide', async () => {
    const [inn1, inn2] = knownInns(2, 430);
    h.advance(61_000); // the upstream allows two cold checks a minute; earlier tests used them
    const check = (app: string, inn: string) =>
      h.call(app, '/v1/check', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'shared-key-1' },
        body: JSON.stringify({ inn, purpose: 'requisites' }),
      });
    const a = await check('alpha', inn1!);
    h.advance(61_000);
    const b = await check('beta', inn2!);
    expect(a.status).not.toBe(422);
    expect(b.status).not.toBe(422);
    expect(a.headers.get('x-charged-minor')).toBe('1500');
    expect(b.headers.get('x-charged-minor')).toBe('1500');
    expect(await chargesFor(inn1!)).toHaveLength(1);
    expect(await chargesFor(inn2!)).toHaveLength(1);
  });

  it('another app polling a check it did not create gets 404', async () => {
    const [inn] = knownInns(1, 440);
    const slow = await startHarness({ emulator: { checkSeconds: 5, checkWaitSeconds: 0.05 } });
    try {
      const created = await slow.call('alpha', '/v1/check', {
        method: 'POST',
        body: JSON.stringify({ inn }),
      });
      expect(created.status).toBe(202);
      const { check_id } = (await created.json()) as { check_id: string };
      expect((await slow.call('alpha', `/v1/checks/${check_id}`)).status).toBe(202);
      const other = await slow.call('beta', `/v1/checks/${check_id}`);
      expect(other.status).toBe(404);
    } finally {
      await slow.close();
    }
  });

  it('a no-cache re-read after the window closed is a new paid call, never a replay of the older one', async () => {
    // With keys derived from a 15-minute bucket, this read carried the first call's key: the
    // upstream replayed the old answer, charged 0 and opened no window.
    const [inn] = knownInns(1, 450);
    const first = await h.call('alpha', `/v1/companies/${inn}`);
    expect(first.headers.get('x-charged-minor')).toBe('9900');
    h.advance(16 * 60_000);
    const again = await h.call('alpha', `/v1/companies/${inn}`, { headers: { 'cache-control': 'no-cache' } });
    expect(again.status).toBe(200);
    expect(again.headers.get('x-charged-minor')).toBe('9900');
    expect(Date.parse(again.headers.get('x-window-expires')!)).toBeGreaterThan(h.gateway.clock.now());
    const charges = await chargesFor(inn!);
    expect(charges).toHaveLength(2);
    expect(charges[0]!.idempotency_key).not.toBe(charges[1]!.idempotency_key);
  });
});
