// Issue 28 item 4: prices learned from every charge. The emulator raises the dossier price from
// 9,900 to 29,700; /v1/me keeps showing 9,900 for 30 s (the spec: a new price is charged a few
// seconds before /v1/me shows it). The first charge at the new price teaches the replica that
// made it, and the bus teaches the other one: 15 concurrent reads on the OTHER replica are all
// estimated at 29,700, so a 297,000 day cap is not passed. Before, every replica kept estimating
// 9,900 until its next /v1/me read and the same traffic overspent the cap by 148,500 (50 %).
// The emulator's ledger is the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type ReplicaHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';

const OLD = 9_900;
const NEW = 29_700;
const CAP = 10 * NEW;

describe('a price rise mid-traffic', () => {
  let r: ReplicaHarness | null;
  beforeAll(async () => {
    r = await startRedisReplicas({
      emulator: { priceLagSeconds: 30 },
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
    });
    if (!r && process.env.REQUIRE_REDIS === '1') throw new Error('REQUIRE_REDIS=1 but no Redis');
  });
  afterAll(async () => r?.close());

  it('is learned from the first new-price charge on every replica: the cap holds', async (ctx) => {
    if (!r) return ctx.skip();
    const { h, second } = r;
    const inns = knownInns(16, 400);
    const first = await h.call('capped', `/v1/companies/${inns[0]}`);
    expect(first.headers.get('x-charged-minor')).toBe(String(OLD));

    await h.emu('/prices', { dossier: NEW });
    const shown = (await h.emu('/prices')) as { shown: Array<{ key: string; price_minor: number }> };
    expect(shown.shown.find((p) => p.key === 'dossier')?.price_minor).toBe(OLD); // /v1/me still says 9,900

    const learning = await h.call('capped', `/v1/companies/${inns[1]}`);
    expect(learning.status).toBe(200);
    expect(learning.headers.get('x-charged-minor')).toBe(String(NEW));
    await new Promise((res) => setTimeout(res, 300)); // the bus reaches the other replica

    const token = h.tokens.capped!;
    const answers = await Promise.all(
      inns
        .slice(2)
        .map((inn) =>
          fetch(`${second.url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } }),
        ),
    );
    const statuses = answers.map((a) => a.status);
    const ledger = await h.ledger();
    const spent = ledger.entries.reduce((sum, e) => sum + e.amount_minor, 0);
    // room after the two reads: 297,000 - 9,900 - 29,700 = 257,400 = 8 reads at 29,700
    expect(statuses.filter((s) => s === 200)).toHaveLength(8);
    expect(statuses.filter((s) => s === 402)).toHaveLength(6);
    expect(spent).toBeLessThanOrEqual(CAP);
    expect(spent).toBe(OLD + 9 * NEW);
  });
});
