// No request stuck on a stored error: after an upstream error that the spec says charged
// nothing (503 billing_unavailable: "no charge could be made"; 502 source_unavailable: "a retry
// after a minute makes sense"), the gateway's own retry and an app's later retry reach the
// upstream's real work again, and the emulator's ledger shows one charge. Under the matrix's
// replay-errors mode the upstream replays a stored error to every reuse of the key for a day
// (docs/upstream-gaps.md "Modes"), so the gateway must switch to a fresh key after such a replay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

describe('retries after an uncharged upstream error', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  const chargesFor = async (inn: string) => (await h.ledger()).entries.filter((e) => e.inn === inn);

  it('one 503 billing_unavailable: the gateway`s retry gets the dossier, charged once', async () => {
    const [inn] = knownInns(1, 5300);
    await h.emu('/faults', { route: 'company', count: 1, status: 503 });
    const res = await h.call('alpha', `/v1/companies/${inn}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('9900');
    expect(await chargesFor(inn!)).toHaveLength(1);
  });

  it('502 source_unavailable, the app retries a minute later: the register is asked again', async () => {
    const [inn] = knownInns(1, 5400);
    await h.emu('/faults', { route: 'company', count: 1, status: 502 });
    const first = await h.call('alpha', `/v1/companies/${inn}`);
    expect(first.status).toBe(502);
    expect(await chargesFor(inn!)).toHaveLength(0);
    h.advance(61_000);
    const retry = await h.call('alpha', `/v1/companies/${inn}`);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('x-charged-minor')).toBe('9900');
    expect(await chargesFor(inn!)).toHaveLength(1);
  });
});
