// The fair-share reading a take decides on (admission.ts, issue 33), one governor on a memory
// store whose slot calls are counted, on a manual clock: once past fairRefreshMs (100 ms), a take
// whose last reading says no other app waits or competes goes out at once and the new reading
// comes back in its own round trip (no read before it); when that reading shows another app
// waiting after all, the slots are given back and taken again on it; a reading that shows one is
// read before the take, as before; a first take reads first.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { RateGovernor } from '../../src/limits/rate-governor.ts';
import { classSpec } from '../../src/limits/store-class.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

function setup() {
  const clock = new ManualClock(Date.UTC(2026, 0, 15, 9, 0, 0));
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const calls: string[] = [];
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      if (prop === 'limiterState' || prop === 'takeSlots' || prop === 'returnSlots')
        return (...args: unknown[]) => {
          calls.push(String(prop));
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      return v.bind(target);
    },
  });
  const governor = new RateGovernor({
    store: counted,
    clock,
    classes: {
      search: { limit: 1000, windowMs: 60_000, burst: 1000 },
      key: { limit: 1000, windowMs: 60_000, burst: 1000 },
    },
    apps: [{ name: 'crm' }, { name: 'erp' }],
  });
  /** One search of `app`: granted and released; the slot calls it made. */
  const search = async (app: string) => {
    calls.length = 0;
    const permit = await governor.acquire({ app, route: 'search', maxWaitMs: 1_000 });
    expect(permit).toMatchObject({ ok: true });
    const made = [...calls];
    if (permit.ok) await permit.release(true);
    return made;
  };
  /** Another replica's app starts waiting for search (its member in the waiting log). */
  const waitsElsewhere = (app: string) =>
    store.takeSlots([classSpec({ kind: 'waiting', cls: 'search', app }, 1_000_000_000, 60_000)], 'replica-2');
  return { clock, governor, search, waitsElsewhere };
}

describe('the fair-share reading a take decides on', () => {
  it('alone on its last reading: read in the take`s own round trip once past 100 ms, not before it', async () => {
    const { clock, governor, search } = setup();
    expect(await search('crm')).toEqual(['limiterState', 'takeSlots']);
    clock.advance(50);
    expect(await search('crm')).toEqual(['takeSlots']);
    clock.advance(150);
    expect(await search('crm')).toEqual(['takeSlots']);
    // The folded read renewed the reading: 50 ms later nothing is read with the take either.
    clock.advance(50);
    expect(await search('crm')).toEqual(['takeSlots']);
    await governor.close();
  });

  it('another app waits after all: the slots are given back and taken again on the new reading', async () => {
    const { clock, governor, search, waitsElsewhere } = setup();
    await search('crm');
    await waitsElsewhere('erp');
    clock.advance(150);
    expect(await search('crm')).toEqual(['takeSlots', 'returnSlots', 'takeSlots']);
    // That reading shows erp waiting: the next stale one is read before the take, as before.
    clock.advance(150);
    expect(await search('crm')).toEqual(['limiterState', 'takeSlots']);
    await governor.close();
  });
});
