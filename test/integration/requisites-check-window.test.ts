// A spend cap holds whatever window a finished requisites check leaves (docs/upstream-gaps.md
// "Modes", --requisites-check-window): dossier read, then a requisites check inside that dossier
// window, then a section read. Under the spec table's reading (the emulator's default) the
// check's requisites window replaces the dossier window and the section read is charged again;
// under `keep` (the matrix's requisites-keep mode) it stays free. The invariant either way: the
// emulator's ledger never passes the cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

// A finished requisites check ends the company's dossier window in the gateway's books (the
// table reading; under `keep` that only makes a later read estimated as charged, which is safe).
const windowFix = it;

const CAP = 9900 + 1500 + 5000;

describe('a requisites check inside a dossier window', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
      emulator: { checkSeconds: 0.05, checkWaitSeconds: 2 },
    });
  });
  afterAll(() => h.close());

  windowFix('the next section read never takes spend past the cap', async () => {
    const [inn] = knownInns(1, 5600);
    expect((await h.call('capped', `/v1/companies/${inn}`)).headers.get('x-charged-minor')).toBe('9900');
    h.advance(60_000);
    const check = await h.call('capped', '/v1/check', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inn, purpose: 'requisites' }),
    });
    expect(check.status).toBe(200);
    const section = await h.call('capped', `/v1/companies/${inn}/founders`);
    const outcome = `${section.status} ${section.headers.get('x-charged-minor') ?? ''}`.trim();
    // Free, or refused because the gateway (not knowing which reading the upstream follows) counts
    // the dossier window as ended: a refusal says it cost nothing.
    expect(['200 0', '402 0']).toContain(outcome);
    expect((await h.ledger()).totals.amount_minor).toBeLessThanOrEqual(CAP);
  });
});
