// A spend cap holds whatever window a finished requisites check leaves (docs/upstream-gaps.md
// "Modes", --requisites-check-window): dossier read, then a requisites check inside that dossier
// window, then a section read. Under the spec table's reading (the emulator's default) the
// check's requisites window replaces the dossier window and the section read is charged again;
// under `keep` (the matrix's requisites-keep mode) it stays free. The invariant either way: the
// emulator's ledger never passes the cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { emulatorTestMode, type Harness, startHarness } from '../helpers/gateway-harness.ts';

// Known gap under the table reading (issue 17): src/cost/window-tracker.ts keeps dossierUntil
// when a requisites check's data is ready, so the section read is estimated at 0 and the
// upstream's 9900 lands past the cap (measured: spend 21 300 against a cap of 16 400). Remove
// with the fix (treat a finished requisites check as ending the dossier window): it.fails then
// turns red.
const windowFix = emulatorTestMode().name === 'requisites-keep' ? it : it.fails;

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
    expect(['200 0', '402']).toContain(outcome);
    expect((await h.ledger()).totals.amount_minor).toBeLessThanOrEqual(CAP);
  });
});
