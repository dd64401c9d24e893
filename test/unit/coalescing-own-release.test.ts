// A read of a key this replica has just led, arriving after the answer but before the lead's
// hand-over released the cross-replica lock (a turn of the event loop and a store round trip or
// two later), waits for that release and leads: it does not find the lock taken, start its call,
// stop it (NotLeader), give its first steps back and do them again once the lock is free. Before
// this, half of back-to-back no-cache reads of one dossier through a Redis gateway did that
// (seen with MONITOR: a take given back with three ZREMs, a released charge, then the lock, the
// charge and the take again), ~5 store round trips more before the upstream call.
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Coalescer, type SharedAnswer } from '../../src/cost/coalescer.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { StateStore } from '../../src/store/store.ts';
import { NotLeader } from '../../src/upstream/governed-upstream.ts';

it('a read arriving while this replica’s last lead still holds the lock waits for its release and leads at once', async () => {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  // The lead's release waits until the test lets it go (a store round trip in flight).
  let letGo!: () => void;
  const held = new Promise<void>((r) => {
    letGo = r;
  });
  const slowRelease = async (key: string, owner: string) => {
    await held;
    return store.releaseLock(key, owner);
  };
  const proxied = new Proxy(store, {
    get(target, prop) {
      if (prop === 'releaseLock') return slowRelease;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as StateStore;
  const coalescer = new Coalescer({ store: proxied, clock, distributed: true, pollMs: 20 });
  let attempts = 0;
  let sent = 0;
  const call = async (lead: Promise<boolean> | null): Promise<SharedAnswer> => {
    attempts++;
    if (lead && !(await lead)) throw new NotLeader();
    sent++;
    return { status: 200, headers: {}, body: Buffer.from(`answer ${sent}`) };
  };
  const park = (a: SharedAnswer) => a;
  const options = { early: true, parkOnDemand: true };

  const first = await coalescer.run('k', clock.now() + 60_000, call, park, options);
  expect(first.follower).toBe(false);
  await new Promise((r) => setImmediate(r)); // the hand-over has begun: the release is in flight
  expect(await store.get('coalesce:lock:k')).not.toBeNull();

  const second = coalescer.run('k', clock.now() + 60_000, call, park, options);
  await new Promise((r) => setImmediate(r));
  expect(attempts).toBe(1); // waiting for the release, not trying the lock
  letGo();
  const answer = await second;
  await coalescer.idle();

  expect(answer.follower).toBe(false);
  expect(answer.answer.body.toString()).toBe('answer 2');
  expect(attempts).toBe(2); // one attempt each: no NotLeader turn
  expect(await store.get('coalesce:lock:k')).toBeNull();
});
