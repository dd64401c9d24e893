// A follower on another replica is woken by the bus when its leader has parked its answer or
// given its lead up, not by its poll: on a clock that never moves (no poll ever fires) the
// follower still gets the leader's answer, or takes the lead after a failed one. Without a bus
// the same follower waits for its poll (the control).
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Coalescer, type SharedAnswer } from '../../src/cost/coalescer.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

const park = (a: SharedAnswer) => a;
const onDemand = { parkOnDemand: true };
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function twoReplicas(withBus: boolean) {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const options = { store, clock, distributed: true, ...(withBus ? { bus: store } : {}) };
  return { clock, store, a: new Coalescer(options), b: new Coalescer(options) };
}

function pausedCall() {
  let finish!: (a: SharedAnswer) => void;
  let fail!: (e: Error) => void;
  let calls = 0;
  const call = () => {
    calls++;
    if (calls > 1) return Promise.resolve({ status: 200, headers: {}, body: Buffer.from('own call') });
    return new Promise<SharedAnswer>((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
  };
  return {
    call,
    finish: (body: string) => finish({ status: 200, headers: {}, body: Buffer.from(body) }),
    fail: (e: Error) => fail(e),
    calls: () => calls,
  };
}

/** `a` leads a paused call of 'k'; a few turns later `b` asks for the same key (the follower). */
async function leaderAndFollower(
  clock: ManualClock,
  a: Coalescer,
  b: Coalescer,
  up: ReturnType<typeof pausedCall>,
) {
  const leader = a.run('k', clock.now() + 60_000, up.call, park, onDemand);
  await turns(5);
  let got: string | null = null;
  const follower = b.run('k', clock.now() + 60_000, up.call, park, onDemand).then((r) => {
    got = r.answer.body.toString();
    return r;
  });
  return { leader, follower, got: () => got };
}

it('with the bus, a follower on another replica gets the parked answer with no poll', async () => {
  const { clock, a, b } = twoReplicas(true);
  const up = pausedCall();
  const { leader, follower, got } = await leaderAndFollower(clock, a, b, up);
  await turns(20); // the follower has looked, said it waits, and sleeps on the frozen clock
  expect(got()).toBeNull();
  up.finish('dossier');
  await leader;
  await turns(50);
  expect(got()).toBe('dossier');
  expect((await follower).follower).toBe(true);
  expect(up.calls()).toBe(1);
  await Promise.all([a.idle(), b.idle(), a.close(), b.close()]);
});

it('with the bus, a leader that fails wakes the follower, which leads its own call', async () => {
  const { clock, a, b } = twoReplicas(true);
  const up = pausedCall();
  const leader = a.run('k', clock.now() + 60_000, up.call, park, onDemand);
  await turns(5);
  const follower = b.run('k', clock.now() + 60_000, up.call, park, onDemand);
  await turns(20);
  up.fail(new Error('upstream went away'));
  await expect(leader).rejects.toThrow('upstream went away');
  await turns(50);
  const r = await follower;
  expect(r.answer.body.toString()).toBe('own call');
  expect(r.follower).toBe(false);
  await Promise.all([a.close(), b.close()]);
});

it('without a bus the follower waits for its poll (control)', async () => {
  const { clock, a, b } = twoReplicas(false);
  const up = pausedCall();
  const { leader, follower, got } = await leaderAndFollower(clock, a, b, up);
  await turns(20);
  up.finish('dossier');
  await leader;
  await turns(50);
  expect(got()).toBeNull();
  clock.advance(20);
  await turns(50);
  expect(got()).toBe('dossier');
  await follower;
});

it("with the bus, the follower is told of a parked answer without waiting for the leader's release reply", async () => {
  const { clock, store, a, b } = twoReplicas(true);
  // The store applies the release at once but its reply is held back (a slow round trip).
  let answerRelease!: () => void;
  const replyHeld = new Promise<void>((resolve) => {
    answerRelease = resolve;
  });
  const release = store.releaseLock.bind(store);
  store.releaseLock = (lock, owner) => release(lock, owner).then((v) => replyHeld.then(() => v));
  const up = pausedCall();
  const { leader, follower, got } = await leaderAndFollower(clock, a, b, up);
  await turns(20);
  up.finish('dossier');
  await leader;
  await turns(50);
  expect(got()).toBe('dossier'); // before the release's reply
  expect((await follower).follower).toBe(true);
  expect(up.calls()).toBe(1);
  answerRelease();
  await Promise.all([a.idle(), b.idle(), a.close(), b.close()]);
});
