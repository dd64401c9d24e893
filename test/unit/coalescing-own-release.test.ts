// A read of a key this replica has just led, arriving after the answer but before the lead's
// hand-over sent the cross-replica lock's release (a turn of the event loop and a store round
// trip later), waits until that release is sent, then asks for the lock: on the one connection
// the release goes first, so the lock is free. Before, it found the lock taken, started its
// call, stopped it (not led), gave its first steps back and did them again once the lock was
// free. Half of back-to-back no-cache reads of one dossier through a Redis gateway did that
// (seen with MONITOR: a take given back with three ZREMs, a released charge, then the lock, the
// charge and the take again), ~5 store round trips more before the upstream call.
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Coalescer, type SharedAnswer } from '../../src/cost/coalescer.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { StateStore } from '../../src/store/store.ts';

it('a read arriving before this replica’s last lead sent its lock release waits for it and leads without a not-led turn', async () => {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  // One connection: commands run one after another, in the order they were sent. The hand-over's
  // look for a waiting follower is slow to answer (a round trip under load).
  let letGo!: () => void;
  const held = new Promise<void>((r) => {
    letGo = r;
  });
  let line: Promise<unknown> = Promise.resolve();
  const proxied = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const slow = prop === 'get' && String(args[0]).startsWith('coalesce:wanted:');
        const run = async () => {
          if (slow) await held;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
        const result = line.then(run, run);
        line = result.catch(() => {});
        return result;
      };
    },
  }) as StateStore;
  const coalescer = new Coalescer({ store: proxied, clock, distributed: true, pollMs: 20 });
  let sent = 0;
  let notLeader = 0;
  // What a call that stopped before sending because another replica leads answers (a value).
  const NOT_LED: SharedAnswer = { status: 0, headers: {}, body: Buffer.alloc(0) };
  const call = async (lead: Promise<boolean> | null): Promise<SharedAnswer> => {
    if (lead && !(await lead)) {
      notLeader++;
      return NOT_LED;
    }
    sent++;
    return { status: 200, headers: {}, body: Buffer.from(`answer ${sent}`) };
  };
  const park = (a: SharedAnswer) => a;
  const options = { early: true, parkOnDemand: true, notLed: (a: SharedAnswer) => a === NOT_LED };

  const first = await coalescer.run('k', clock.now() + 60_000, call, park, options);
  expect(first.follower).toBe(false);
  await new Promise((r) => setImmediate(r)); // the hand-over asks whether anyone waits
  await new Promise((r) => setImmediate(r));
  expect(await store.get('coalesce:lock:k')).not.toBeNull();

  const second = coalescer.run('k', clock.now() + 60_000, call, park, options);
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  letGo();
  const answer = await second;
  await coalescer.idle();

  expect(answer.follower).toBe(false);
  expect(answer.answer.body.toString()).toBe('answer 2');
  expect(notLeader).toBe(0);
  expect(sent).toBe(2);
  expect(await store.get('coalesce:lock:k')).toBeNull();
});
