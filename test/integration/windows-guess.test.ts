// A read this replica last saw covered by a company's window goes on as covered while the
// store's windows are read (src/pipeline/stages/cache.ts, WindowTracker.guess): its charge entry
// of 0 and its rate slot are asked for at once, and the call waits for the store's answer.
// Where the store disagrees (another replica's requisites check ended the dossier window), nothing
// is sent on the guess: the read starts over from the store's windows and is estimated, held and
// charged as the new dossier read it is.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type GatewayInstance, type Harness, startHarness } from '../helpers/gateway-harness.ts';

/** The memory store, with its windows reads held while `held` is set. */
function gatedStore(store: Store) {
  let release: () => void = () => {};
  let gate: Promise<void> | null = null;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'windows')
        return async (inn: string) => {
          if (gate) await gate;
          return target.windows(inn);
        };
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store: wrapped,
    hold() {
      gate = new Promise<void>((resolve) => {
        release = () => {
          gate = null;
          resolve();
        };
      });
    },
    release: () => release(),
  };
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('a read on a guessed window', () => {
  let h: Harness;
  let gated: ReturnType<typeof gatedStore>;
  let second: GatewayInstance;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'crm' }],
      emulator: { checkSeconds: 0.05, checkWaitSeconds: 2 },
      store: (clock) => {
        gated = gatedStore(createStore({ clock, cacheMaxBytes: 16 * 1024 * 1024 }));
        return gated.store;
      },
    });
    second = await h.addGateway(h.gateway.store);
  });
  afterAll(() => h.close());

  const companyCalls = async (inn: string) =>
    ((await h.emu('/requests?route=company')) as { requests: Array<{ path: string }> }).requests.filter((r) =>
      r.path.endsWith(inn),
    ).length;

  it('opens its charge entry before the store has answered, and is sent only after', async () => {
    const [inn] = knownInns(1, 5700);
    expect((await h.call('crm', `/v1/companies/${inn}`)).headers.get('x-charged-minor')).toBe('9900');
    const calls = await companyCalls(inn!);
    gated.hold();
    const reading = h.call('crm', `/v1/companies/${inn}`, { headers: { 'cache-control': 'no-cache' } });
    let pending = 0;
    let sent: number;
    try {
      for (let i = 0; pending === 0 && i < 200; i++) {
        await turns(5);
        pending = (await h.gateway.store.pendingCharges()).filter((p) => p.inn === inn).length;
      }
      sent = await companyCalls(inn!);
    } finally {
      gated.release();
    }
    expect(pending).toBe(1); // the charge entry of 0 is written while the windows read waits
    expect(sent).toBe(calls); // nothing sent on the guess alone
    const res = await reading;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('0');
    expect(res.headers.get('x-cost-estimate-minor')).toBe('0');
    expect(await companyCalls(inn!)).toBe(calls + 1);
  });

  it('starts over from the store when another replica ended the window, and is charged as a new read', async () => {
    const [inn] = knownInns(1, 5720);
    expect((await h.call('crm', `/v1/companies/${inn}`)).headers.get('x-charged-minor')).toBe('9900');
    h.advance(60_000);
    // A requisites check through the other replica: under the spec's table it replaces the
    // dossier window (upstream and in the shared store); this replica still remembers the window.
    const check = await fetch(`${second.url}/v1/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.tokens.crm}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inn, purpose: 'requisites' }),
    });
    expect(check.status).toBe(200);
    const calls = await companyCalls(inn!);
    const res = await h.call('crm', `/v1/companies/${inn}`, { headers: { 'cache-control': 'no-cache' } });
    expect(res.status).toBe(200);
    // Estimated (and held on the budgets) as the charged read it is, not as the guess's 0.
    expect(res.headers.get('x-cost-estimate-minor')).toBe('9900');
    expect(res.headers.get('x-charged-minor')).toBe('9900');
    expect(await companyCalls(inn!)).toBe(calls + 1);
    expect((await h.gateway.store.pendingCharges()).filter((p) => p.inn === inn)).toEqual([]);
    const charges = (await h.ledger()).entries.filter((e) => e.inn === inn);
    // The upstream's own books: the dossier was bought twice (before and after the check).
    expect(charges.filter((e) => e.amount_minor === 9900)).toHaveLength(2);
  });
});
